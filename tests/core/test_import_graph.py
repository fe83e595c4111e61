"""The house's floors: module-level run-time imports form no cycle and never point up a floor.

Imports inside functions (lazy dispatch, optional dependencies) and imports under
``TYPE_CHECKING`` are not run when a module loads, so they are left out; every import a module
runs on load, ``try``/``except`` branches included, is an arrow. A module may import its own
floor (without a cycle) or any floor below it.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: Installed package -> source folder (setup.py maps the last two into ``edgegym``).
PACKAGES = {"edgegym": "edgegym", "edgegym.agents": "agents", "edgegym.baselines": "baselines"}

#: Floors from the ground up; a module belongs to the floor of its longest listed prefix.
FLOORS: list[tuple[str, ...]] = [
    (
        "edgegym.hardware",
        "edgegym.workload",
        "edgegym.provenance",
        "edgegym.outputs",
        "edgegym.inputs",
        "edgegym.jsonshape",
        "edgegym.parallel",
        "edgegym.journal",
        "edgegym.progress",
    ),
    ("edgegym.core.registry",),
    ("edgegym.scenarios",),
    ("edgegym.core",),
    ("edgegym.real",),
    ("edgegym.families",),
    ("edgegym.wrappers",),
    ("edgegym.baselines",),
    ("edgegym.evaluation", "edgegym.plotting", "edgegym.agents"),
    ("edgegym.leaderboard", "edgegym.reproduce"),
    ("edgegym.cli", "edgegym.__main__", "edgegym"),
]


def _modules() -> dict[str, Path]:
    out = {}
    for package, folder in PACKAGES.items():
        base = ROOT / folder
        for path in sorted(base.rglob("*.py")):
            rel = path.relative_to(base).with_suffix("")
            if package == "edgegym" and rel.parts[0] in ("agents", "baselines", "scenario_data"):
                continue  # the mapped folders, when a checkout links them in
            parts = [p for p in rel.parts if p != "__init__"]
            out[".".join([package, *parts])] = path
    return out


def _run_time_imports(path: Path, name: str, known: dict[str, Path]) -> set[str]:
    """edgegym modules that loading ``name`` imports."""
    is_package = path.name == "__init__.py"
    found: set[str] = set()

    def absolute(node: ast.ImportFrom) -> str:
        if not node.level:
            return node.module or ""
        base = name.split(".") if is_package else name.split(".")[:-1]
        base = base[: len(base) - node.level + 1]
        return ".".join([*base, *([node.module] if node.module else [])])

    def visit(body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, ast.Import):
                found.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                module = absolute(node)
                for alias in node.names:
                    sub = f"{module}.{alias.name}"
                    found.add(sub if sub in known else module)
            elif isinstance(node, ast.If):
                if "TYPE_CHECKING" not in ast.unparse(node.test):
                    visit(node.body)
                visit(node.orelse)
            elif isinstance(node, ast.Try):
                visit(node.body)
                visit(node.orelse)
                visit(node.finalbody)
                for handler in node.handlers:
                    visit(handler.body)

    visit(ast.parse(path.read_text()).body)
    return {m for m in found if m in known and m != name}


def _graph() -> dict[str, set[str]]:
    known = _modules()
    return {name: _run_time_imports(path, name, known) for name, path in known.items()}


def floor_of(module: str) -> int:
    best, floor = -1, None
    for i, prefixes in enumerate(FLOORS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best:
                best, floor = len(prefix), i
    if floor is None:
        raise AssertionError(f"{module} is on no floor: add its package to FLOORS")
    return floor


GRAPH = _graph()


def test_the_graph_is_read() -> None:
    # The reader finds the arrows it must: a family's env imports the core env.
    assert "edgegym.core.env" in GRAPH["edgegym.families.continual.env"]
    assert len(GRAPH) > 100


def test_every_module_has_a_floor() -> None:
    for module in GRAPH:
        floor_of(module)


def test_no_import_runs_up_a_floor() -> None:
    upward = [
        f"{a} (floor {floor_of(a)}) -> {b} (floor {floor_of(b)})"
        for a, targets in sorted(GRAPH.items())
        for b in sorted(targets)
        if floor_of(b) > floor_of(a)
    ]
    assert not upward, "imports that run up a floor:\n" + "\n".join(upward)


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def connect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            connect(v)
    return out


def test_no_cycles() -> None:
    cycles = _cycles(GRAPH)
    assert not cycles, "import cycles: " + "; ".join(" <-> ".join(c) for c in cycles)


@pytest.mark.parametrize(
    ("graph", "expected"),
    [
        ({"a": {"b"}, "b": {"a"}, "c": set()}, [["a", "b"]]),
        ({"a": {"b"}, "b": {"c"}, "c": set()}, []),
    ],
)
def test_the_cycle_finder_finds_cycles(graph, expected) -> None:
    assert _cycles(graph) == expected


#: A module a reader can hold: at most this many lines (split a longer one by concern, as the
#: reproductions' report text and claims live beside the code that runs them).
MAX_LINES = 1000


def test_no_module_is_longer_than_a_reader_can_hold():
    long = {
        f"{src}/{p.relative_to(ROOT / src)}": n
        for src in PACKAGES.values()
        for p in (ROOT / src).rglob("*.py")
        if (n := len(p.read_text().splitlines())) > MAX_LINES
    }
    assert not long, f"modules over {MAX_LINES} lines: {long}"


#: The experiments: reproductions, leaderboard and benchmarks use edgegym's public API only.
EXPERIMENTS = ("edgegym/reproduce", "edgegym/leaderboard", "benchmarks")


def test_experiments_use_the_public_api_only():
    """No private name imported from outside the experiment's own package, and no private
    attribute read off another object (``env._x``)."""
    found = []
    for folder in EXPERIMENTS:
        own = folder.replace("/", ".")
        for path in sorted((ROOT / folder).rglob("*.py")):
            tree = ast.parse(path.read_text())
            for node in ast.walk(tree):
                if isinstance(node, ast.ImportFrom) and node.module:
                    private = [a.name for a in node.names if a.name.startswith("_")]
                    if private and not node.module.startswith(own):
                        found.append(f"{path.name}: from {node.module} import {private}")
                elif (
                    isinstance(node, ast.Attribute)
                    and node.attr.startswith("_")
                    and not node.attr.startswith("__")
                    and isinstance(node.value, ast.Name)
                    and node.value.id not in ("self", "cls")
                ):
                    found.append(f"{path.name}: {node.value.id}.{node.attr}")
    assert not found, found


def _all_imports(path: Path, name: str, known: dict[str, Path]) -> set[str]:
    """edgegym modules that ``name`` imports anywhere, inside functions too."""
    is_package = path.name == "__init__.py"
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".") if is_package else name.split(".")[:-1]
                base = base[: len(base) - node.level + 1]
                module = ".".join([*base, *([node.module] if node.module else [])])
            else:
                module = node.module or ""
            for alias in node.names:
                sub = f"{module}.{alias.name}"
                found.add(sub if sub in known else module)
    return {m for m in found if m in known and m != name}


def _runnable(path: Path) -> bool:
    """The module runs as a script (``python -m``): it has a ``__main__`` guard."""
    return any(
        isinstance(node, ast.If) and "__main__" in ast.unparse(node.test)
        for node in ast.parse(path.read_text()).body
    )


def test_no_module_run_as_a_script_is_imported_back_by_what_it_imports() -> None:
    """Run as ``python -m edgegym.X``, X is ``__main__``; a module it imports (at load or inside
    a function) that imports ``edgegym.X`` gets a second copy of it, whose settings X's main
    never set (the seeds-100 Ekya claims once named the default seeds this way)."""
    known = _modules()
    every = {name: _all_imports(path, name, known) for name, path in known.items()}
    back = []
    for name, path in sorted(known.items()):
        if not _runnable(path):
            continue
        seen, todo = set(), list(every[name])
        while todo:
            m = todo.pop()
            if m not in seen:
                seen.add(m)
                todo.extend(every.get(m, ()))
        if name in seen:
            back.append(name)
    assert not back, "run as scripts and imported back by their own imports: " + ", ".join(back)
