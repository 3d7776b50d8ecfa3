"""The command line is a package without import cycles; generated modules' import path holds."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import harnessc.runtime.cli as cli_package

PACKAGE = "harnessc.runtime.cli"
ROOT = Path(cli_package.__file__).parent


def _modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for path in sorted(ROOT.rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join([PACKAGE, *parts])] = path
    return found


def _imports(path: Path, package: str) -> set[str]:
    """Modules of the package that ``path`` imports anywhere (also inside functions and
    TYPE_CHECKING blocks: a cycle only for the type checker is still a cycle)."""
    tree = ast.parse(path.read_text())
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                module = f"{base}.{node.module}" if node.module else base
            else:
                module = node.module or ""
            names.add(module)
            names.update(f"{module}.{alias.name}" for alias in node.names)
    return names


def test_the_package_has_no_import_cycle() -> None:
    modules = _modules()
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        graph[name] = {m for m in _imports(path, package) if m in modules and m != name}
    # A package's __init__ re-exporting its submodules is not a cycle: a submodule
    # importing its own parent package would be, so only edges into __init__ count.
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycle = path[path.index(nxt) :] + [nxt]
                raise AssertionError("import cycle: " + " -> ".join(cycle))
            if nxt not in state:
                visit(nxt)
        path.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node)
    assert f"{PACKAGE}.main" in graph and f"{PACKAGE}.repl.commands" in graph


@pytest.mark.parametrize("module", sorted(_modules()))
def test_each_module_imports_first_in_a_fresh_interpreter(module: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", f"import {module}"], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr


def test_the_generated_modules_import_path_still_works() -> None:
    code = (
        "from harnessc.runtime import run_cli as a, run_durable_cli as d\n"
        "from harnessc.runtime.cli.main import run_cli as b\n"
        "assert callable(a) and callable(d) and a is not b\n"
        "a(lambda **_: None, ['--help'], agent_name='x')\n"
        "import sys\n"
        "assert 'harnessc.runtime.cli.repl' not in sys.modules, 'the REPL loads lazily'\n"
        "assert 'rich' not in sys.modules, 'rich loads only on a terminal'\n"
        "assert 'harnessc.runtime.serve' not in sys.modules, 'the server loads for --serve'\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
