"""The runtime's floors hold: a package imports only packages on floors below its own
(or, where the table says so, beside it). Every import counts: at module level, inside a
function (imported lazily) and under ``TYPE_CHECKING``.

The table is DESIGN.md's layout, low to high. The graph is drawn from the source with
``ast``, so the test needs no import of the runtime."""

from __future__ import annotations

import ast
import sys
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RUNTIME = ROOT / "harnessc" / "runtime"

# package -> the runtime packages it may import. ``harnessc`` (the version) and
# ``support`` are below everything.
FLOORS: dict[str, set[str]] = {
    "support": set(),
    "core": {"support"},
    "processes": {"support", "core"},
    "providers": {"support", "core"},
    "session": {"support", "core"},
    "resources": {"support", "core"},
    # the kernel-enforced boundary of the programs the agent starts (bash, hooks, MCP
    # servers): below the tools that start them, beside the process supervisor
    "sandbox": {"support", "core", "processes"},
    "tools": {"support", "core", "processes", "sandbox"},
    "checkpoints": {"support", "core", "session"},
    "options": {"support", "core", "providers", "session", "resources", "tools", "sandbox"},
    "permissions": {"support", "core", "processes", "tools", "sandbox", "options"},
    "compaction": {"support", "core", "providers", "session", "options"},
    "mcp": {"support", "core", "processes", "sandbox", "tools", "options"},
    "extensions": {
        "support",
        "core",
        "processes",
        "providers",
        "session",
        "resources",
        "tools",
        "sandbox",
        "options",
        "permissions",
        "compaction",
    },
    "telemetry": {
        "support",
        "core",
        "processes",
        "providers",
        "session",
        "tools",
        "options",
        "extensions",
    },
}
_PARTS = set(FLOORS)
FLOORS["agent"] = _PARTS | {"mcp", "checkpoints"}
FLOORS["runs"] = FLOORS["agent"] | {"agent"}
FLOORS["durable"] = FLOORS["runs"] | {"runs"}
# The doors: each a translation of runs/ into its protocol; no door imports another.
FLOORS["cli"] = FLOORS["durable"] | {"durable"}
FLOORS["serve"] = FLOORS["durable"] | {"durable"}

# Imports against the floors that a change in progress removes; each names its issue.
PENDING: dict[tuple[str, str], str] = {}


def _package(module: str) -> str | None:
    """The runtime package of a dotted module name (None: outside the runtime, or the
    runtime's facade ``harnessc.runtime`` itself)."""
    parts = module.split(".")
    if parts[:2] != ["harnessc", "runtime"] or len(parts) < 3:
        return None
    return parts[2]


def _module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path) -> list[tuple[str, int]]:
    """Every module ``path`` imports (absolute, resolved), with its line."""
    module = _module_name(path)
    is_package = path.name == "__init__.py"
    found: list[tuple[str, int]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".")
                if not is_package:
                    base = base[:-1]
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            found.append((target, node.lineno))
            # ``from harnessc.runtime import agent``: the names may be packages
            if _package(target) is None and target == "harnessc.runtime":
                found += [(f"{target}.{alias.name}", node.lineno) for alias in node.names]
    return found


def _graph() -> dict[tuple[str, str], list[str]]:
    edges: dict[tuple[str, str], list[str]] = defaultdict(list)
    for path in sorted(RUNTIME.rglob("*.py")):
        source = _package(_module_name(path))
        if source is None:
            continue
        for target, line in _imports(path):
            dest = _package(target)
            if dest is None or dest == source or not (RUNTIME / dest).is_dir():
                continue
            edges[(source, dest)].append(f"{path.relative_to(ROOT)}:{line} imports {target}")
    return edges


def test_every_runtime_package_has_a_floor() -> None:
    packages = {p.name for p in RUNTIME.iterdir() if (p / "__init__.py").exists()}
    assert packages <= set(FLOORS), f"packages with no floor: {sorted(packages - set(FLOORS))}"


def test_no_import_runs_against_the_floors() -> None:
    wrong = [
        where
        for (source, dest), places in sorted(_graph().items())
        if dest not in FLOORS.get(source, set()) and (source, dest) not in PENDING
        for where in places
    ]
    assert not wrong, "imports against the floors:\n" + "\n".join(wrong)


def test_pending_exceptions_are_still_needed() -> None:
    graph = _graph()
    stale = [pair for pair in PENDING if pair not in graph]
    assert not stale, f"no longer imported, drop from PENDING: {stale}"


@pytest.mark.parametrize("package", ["support", "core"])
def test_the_vocabulary_imports_nothing_above_it(package: str) -> None:
    above = [
        where
        for (source, dest), places in _graph().items()
        if source == package and dest not in FLOORS[package]
        for where in places
    ]
    assert not above, "\n".join(above)


# The libraries outside the standard library each bottom floor may import: msgspec
# declares the records (``Struct``) the vocabulary is made of; PyYAML reads the YAML the
# runtime loads (support/yamlsafe.py, imported lazily); pathspec reads gitignore-style
# patterns (support/path_patterns.py, imported lazily); pydantic is what the ``Output``
# model of a typed agent is made of (core/output_model.py, imported only by a generated
# module with ``output.schema``).
LIBRARIES: dict[str, set[str]] = {
    "support": {"msgspec", "pathspec", "yaml"},
    "core": {"msgspec", "pydantic"},
}


@pytest.mark.parametrize("package", sorted(LIBRARIES))
def test_the_vocabulary_imports_only_its_libraries(package: str) -> None:
    wrong = []
    for path in sorted((RUNTIME / package).rglob("*.py")):
        for target, line in _imports(path):
            top = target.split(".")[0]
            if top in sys.stdlib_module_names or top in ("harnessc", "__future__"):
                continue
            if top not in LIBRARIES[package]:
                wrong.append(f"{path.relative_to(ROOT)}:{line} imports {target}")
    assert not wrong, "\n".join(wrong)


def test_no_package_cycle() -> None:
    graph: dict[str, set[str]] = defaultdict(set)
    for source, dest in _graph():
        if (source, dest) not in PENDING:
            graph[source].add(dest)
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return path[path.index(nxt) :] + [nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        state[node] = 2
        path.pop()
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            pytest.fail("package cycle: " + " -> ".join(cycle))


def _module_graph() -> dict[str, set[str]]:
    """Module -> the harnessc modules it imports (``from package import name`` counts as
    an import of the submodule ``name`` when there is one, else of the package, as
    grimp and import-linter draw it)."""
    paths = {_module_name(p): p for p in sorted((ROOT / "harnessc").rglob("*.py"))}
    graph: dict[str, set[str]] = {}
    for module, path in paths.items():
        targets: set[str] = set()
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = module.split(".")
                    if path.name != "__init__.py":
                        base = base[:-1]
                    base = base[: len(base) - (node.level - 1)]
                    origin = ".".join(base + ([node.module] if node.module else []))
                else:
                    origin = node.module or ""
                names = [
                    f"{origin}.{alias.name}" if f"{origin}.{alias.name}" in paths else origin
                    for alias in node.names
                ]
            targets.update(n for n in names if n in paths and n != module)
        graph[module] = targets
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                item = stack.pop()
                on_stack.discard(item)
                component.append(item)
                if item == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_module_cycle() -> None:
    """No two modules of harnessc import each other, directly or around a ring, counting
    lazy and ``TYPE_CHECKING`` imports."""
    cycles = _cycles(_module_graph())
    assert not cycles, "import cycles:\n" + "\n".join(" <-> ".join(c) for c in cycles)
