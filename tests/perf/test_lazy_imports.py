"""Start-up stays cheap: packages load their heavy parts only when a name is used.

benchmarks/peers.py measures the effect; these tests pin the behaviour without timing
anything.
"""

from __future__ import annotations

import importlib
import json
import subprocess
import sys

import pytest

# package -> submodules a one-shot run of a python-tool agent never needs
LAZY = {
    "harnessc.runtime.resources": [
        "harnessc.runtime.resources.frontmatter",
        "harnessc.runtime.resources.loader",
        "harnessc.runtime.resources.skills",
        "harnessc.runtime.resources.templates",
        "harnessc.runtime.resources.watch",
    ],
    "harnessc.runtime.session": [
        "harnessc.runtime.session.index",
        "harnessc.runtime.session.replay",
        "harnessc.runtime.agent.tree_moves",
    ],
    # a run asks ``trigger`` whether to compact; the rest loads to compact
    "harnessc.runtime.compaction": [
        "harnessc.runtime.compaction.apply",
        "harnessc.runtime.compaction.branch_summary",
        "harnessc.runtime.compaction.cut_point",
        "harnessc.runtime.compaction.file_ops",
        "harnessc.runtime.compaction.prompts",
        "harnessc.runtime.compaction.summarize",
    ],
    # a generated module names the policy; the spawning side loads with the first program
    # (or when an agent that can start one is built)
    "harnessc.runtime.sandbox": [
        "harnessc.runtime.sandbox.bwrap",
        "harnessc.runtime.sandbox.layout",
        "harnessc.runtime.sandbox.spawn",
    ],
    "harnessc.runtime.tools": [
        "harnessc.runtime.tools.bash",
        "harnessc.runtime.tools.edit",
        "harnessc.runtime.tools.search",
        "harnessc.runtime.tools.tasks",
    ],
}


def _loaded_after(code: str) -> set[str]:
    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout
    return set(json.loads(out.splitlines()[-1]))


@pytest.mark.parametrize("package", sorted(LAZY))
def test_importing_the_package_leaves_heavy_parts_unloaded(package: str) -> None:
    loaded = _loaded_after(f"import {package}")
    assert not loaded & set(LAZY[package])


def test_the_generated_agents_imports_stay_lazy() -> None:
    loaded = _loaded_after(
        "from harnessc.runtime import AgentHarnessOptions, Model, env\n"
        "from harnessc.runtime.session import JsonlSessionRepo, Session\n"
        "from harnessc.runtime.tools import import_object, python_tool"
    )
    for package, heavy in LAZY.items():
        assert not loaded & set(heavy), package
    assert "sqlite3" not in loaded  # only the full-text index needs it


def test_the_runtime_loads_no_dataclass_machinery() -> None:
    # The records are Structs; dataclasses (and difflib, for suggestions) load on first use.
    loaded = _loaded_after("import harnessc.runtime")
    assert "dataclasses" not in loaded and "difflib" not in loaded


# What a run needs only once a tool batch runs (the permission gate, the argument checker,
# the sandbox's binding) or once the spec asks for it (a sandbox policy): none of it loads
# with the runtime (issue 42: msgspec's import is paid for by these).
NOT_AT_IMPORT = (
    "harnessc.runtime.permissions.gate",
    "harnessc.runtime.permissions.rules",
    "harnessc.runtime.permissions.shell_rules",
    "harnessc.runtime.permissions.shown_args",
    "harnessc.runtime.sandbox",
    "harnessc.runtime.sandbox.spawn",
    "harnessc.runtime.tools.validation",
    "hashlib",
    "shlex",
)


def test_the_runtime_leaves_what_a_tool_batch_needs_unloaded() -> None:
    loaded = _loaded_after("import harnessc.runtime")
    assert not loaded & set(NOT_AT_IMPORT), sorted(loaded & set(NOT_AT_IMPORT))


def test_the_runtime_compiles_the_credential_pattern_on_first_use() -> None:
    probe = (
        "import harnessc.runtime\n"
        "from harnessc.runtime.support import secrets\n"
        "assert not secrets._COMPILED, 'compiled at import'\n"
        "assert secrets.is_credential_name('OPENAI_API_KEY') and secrets._COMPILED\n"
    )
    subprocess.run([sys.executable, "-c", probe], check=True)


def test_js_number_still_spells_unusual_floats() -> None:
    from harnessc.runtime.session.jsonl import js_number

    assert js_number(1.8e-05) == "0.000018"
    assert js_number(1.5e16) == "15000000000000000"
    assert js_number(0.0) == "0"


@pytest.mark.parametrize("package", sorted(LAZY))
def test_every_public_name_still_resolves(package: str) -> None:
    module = importlib.import_module(package)
    for name in module.__all__:
        assert getattr(module, name) is not None, name
        assert name in dir(module)


def test_unknown_names_raise_attribute_error() -> None:
    module = importlib.import_module("harnessc.runtime.tools")
    with pytest.raises(AttributeError):
        module.no_such_tool  # noqa: B018


def test_submodules_still_import_through_the_package() -> None:
    from harnessc.runtime.session import index
    from harnessc.runtime.tools import tasks

    assert tasks.__name__ == "harnessc.runtime.tools.tasks"
    assert index.__name__ == "harnessc.runtime.session.index"


def test_builtin_tools_still_builds_every_tool() -> None:
    from harnessc.runtime.tools import builtin_tools

    names = [tool.name for tool in builtin_tools()]
    assert {"read", "bash", "edit", "write", "ls", "grep", "find", "todo", "finish"} <= set(names)
