"""Fixtures: store (see tests/conftest.py)."""
