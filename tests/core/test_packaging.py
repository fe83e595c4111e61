"""Packaging: setup.py lists every package of the folders it maps into ``edgegym``.

``find_packages`` finds the packages under ``edgegym/`` only; the mapped folders' packages
(``agents/sb3`` -> ``edgegym.agents.sb3``, ...) are listed in ``MAPPED``, and one left out
would be missing from the installed package while every test of a checkout still passes.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

#: Installed package -> source folder, as pyproject.toml's package-dir maps them.
FOLDERS = {"edgegym.agents": "agents", "edgegym.baselines": "baselines"}


def _mapped() -> list[str]:
    tree = ast.parse((ROOT / "setup.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "MAPPED" for t in node.targets
        ):
            return list(ast.literal_eval(node.value))
    raise AssertionError("setup.py defines no MAPPED list")


def test_every_package_of_a_mapped_folder_is_listed() -> None:
    mapped = set(_mapped())
    missing = []
    for package, folder in FOLDERS.items():
        for init in sorted((ROOT / folder).rglob("__init__.py")):
            parts = init.parent.relative_to(ROOT / folder).parts
            name = ".".join([package, *parts])
            if name not in mapped:
                missing.append(name)
    assert not missing, f"add to setup.py's MAPPED: {', '.join(missing)}"
