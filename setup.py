"""Package discovery (everything else is in pyproject.toml): every package under edgegym/,
found automatically, plus the top-level folders installed under the edgegym namespace and
their subpackages (pyproject.toml's package-dir maps each folder; its subfolders follow)."""

from setuptools import find_packages, setup

MAPPED = [
    "edgegym.baselines",
    "edgegym.agents",
    "edgegym.agents.policies",
    "edgegym.agents.rllib",
    "edgegym.agents.run",
    "edgegym.agents.sb3",
    "edgegym.scenario_data",
]

setup(packages=[*find_packages(include=["edgegym", "edgegym.*"]), *MAPPED])
