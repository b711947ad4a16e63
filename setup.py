"""Packages for setuptools (the rest of the build is in pyproject.toml).

Here, not in pyproject.toml, so a new subpackage of ``engine`` or ``explorer``
ships without editing a list. The explorer's pages, assets and Streamlit
settings ship inside the ``explorer`` package without moving their folders:
``pages/`` -> ``explorer/_pages``, ``assets/`` -> ``explorer/_assets``,
``streamlit_config.toml`` -> ``explorer/_config`` (``explorer.state`` and
``engine.cli`` look there first, then in the checkout).
"""

from setuptools import find_packages, setup

MAPPED = {"explorer._pages": "pages", "explorer._assets": "assets", "explorer._config": "."}

setup(
    packages=find_packages(include=["engine", "engine.*", "explorer", "explorer.*"]) + list(MAPPED),
    package_dir=MAPPED,
)
