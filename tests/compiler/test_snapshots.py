"""Golden records: every generated module, the JSON Schema, the diagnostics of bad specs.

Update after an intended change with ``pytest tests/compiler --snapshot-update``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner
from syrupy.assertion import SnapshotAssertion

from harnessc.cli import cli
from harnessc.compiler import compile
from harnessc.spec import LoadedSpec, export_schema

REPO = Path(__file__).resolve().parents[2]


def example_specs(agents: Path) -> list[Path]:
    """The examples documented in agents/README.md's table. A spec a user adds there
    (the README's first-agent flow: `harnessc new demo`) has no golden record."""
    documented = re.findall(r"^\| `([\w.-]+\.ya?ml)` \|", (agents / "README.md").read_text(), re.M)
    return sorted(agents / name for name in documented if (agents / name).is_file())


AGENT_SPECS = example_specs(REPO / "agents")
BAD_SPECS = sorted((REPO / "tests" / "specs" / "bad").glob("*.yaml"))


@pytest.mark.parametrize("spec", AGENT_SPECS, ids=lambda p: p.stem)
def test_generated_module(
    spec: Path, snapshot: SnapshotAssertion, load_ok: Callable[[Path], LoadedSpec]
) -> None:
    assert compile(load_ok(spec), REPO / "generated") == snapshot


def test_a_users_own_spec_in_agents_gets_no_golden_record(tmp_path: Path) -> None:
    (tmp_path / "README.md").write_text((REPO / "agents" / "README.md").read_text())
    for spec in AGENT_SPECS:
        (tmp_path / spec.name).write_text(spec.read_text())
    (tmp_path / "demo.yaml").write_text("version: 1\nname: demo\n")
    assert [p.name for p in example_specs(tmp_path)] == [p.name for p in AGENT_SPECS]


def test_json_schema(snapshot: SnapshotAssertion) -> None:
    assert export_schema() == snapshot


def test_there_are_enough_examples_and_bad_specs() -> None:
    assert {p.stem for p in AGENT_SPECS} >= {
        "coder",
        "hello",
        "researcher",
        "autonomous",
        "reviewer",
    }
    assert len(BAD_SPECS) >= 15


@pytest.mark.parametrize("spec", BAD_SPECS, ids=lambda p: p.stem)
def test_bad_spec_diagnostics(spec: Path, snapshot: SnapshotAssertion, in_repo: Path) -> None:
    result = CliRunner().invoke(cli, ["check", spec.relative_to(REPO).as_posix()])
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    record = {"exit_code": result.exit_code, "stderr": result.stderr, "stdout": result.stdout}
    assert record == snapshot
