"""Fixtures: embed (see tests/conftest.py)."""
