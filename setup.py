"""Package discovery (everything else is in pyproject.toml): every package under edgegym/,
found automatically, plus the top-level folders installed under the edgegym namespace."""

from setuptools import find_packages, setup

MAPPED = ["edgegym.baselines", "edgegym.agents", "edgegym.scenario_data"]

setup(packages=[*find_packages(include=["edgegym", "edgegym.*"]), *MAPPED])
