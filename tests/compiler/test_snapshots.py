"""Golden records: every generated module, the JSON Schema, the diagnostics of bad specs.

Update after an intended change with ``pytest tests/compiler --snapshot-update``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner
from syrupy.assertion import SnapshotAssertion

from harnessc.cli import cli
from harnessc.compiler import compile
from harnessc.spec import LoadedSpec, export_schema

REPO = Path(__file__).resolve().parents[2]


SNAPSHOTS = Path(__file__).parent / "__snapshots__" / "test_snapshots.ambr"


def recorded_specs(agents: Path, snapshots: Path) -> list[Path]:
    """The specs of agents/ that have a golden record. A spec a user adds there (the
    README's first-agent flow: `harnessc new demo`) has none and is not compared;
    `--snapshot-update` records every spec."""
    recorded = snapshots.read_text() if snapshots.is_file() else ""
    return [
        spec
        for spec in sorted(agents.glob("*.yaml"))
        if f"# name: test_generated_module[{spec.stem}]" in recorded
    ]


AGENT_SPECS = sorted((REPO / "agents").glob("*.yaml"))
BAD_SPECS = sorted((REPO / "tests" / "specs" / "bad").glob("*.yaml"))


@pytest.mark.parametrize("spec", AGENT_SPECS, ids=lambda p: p.stem)
def test_generated_module(
    spec: Path,
    snapshot: SnapshotAssertion,
    load_ok: Callable[[Path], LoadedSpec],
    request: pytest.FixtureRequest,
) -> None:
    updating = bool(request.config.getoption("--snapshot-update", default=False))
    if not updating and spec not in recorded_specs(spec.parent, SNAPSHOTS):
        pytest.skip(f"{spec.name} has no golden record (not one of the examples)")
    assert compile(load_ok(spec), REPO / "generated") == snapshot


def test_a_users_own_spec_in_agents_gets_no_golden_record(tmp_path: Path) -> None:
    (tmp_path / "demo.yaml").write_text("version: 1\nname: demo\n")
    for spec in AGENT_SPECS:
        (tmp_path / spec.name).write_text(spec.read_text())
    assert [p.name for p in recorded_specs(tmp_path, SNAPSHOTS)] == [p.name for p in AGENT_SPECS]


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


def test_the_examples_build_without_a_warning(in_repo: Path) -> None:
    """`harnessc build` of this repository says nothing a newcomer cannot act on: every
    example spec (and the Claude Code files they use) checks clean."""
    result = CliRunner().invoke(cli, ["build", "--check"])
    assert result.exit_code == 0, result.output
    assert "warning" not in result.output, result.output
