"""Fixtures: corpus (see tests/conftest.py)."""
