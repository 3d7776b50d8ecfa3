"""The committed outputs are current and clean: generated/, schema/, ruff, mypy."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import jsonschema
import pytest
from click.testing import CliRunner

from harnessc.cli import cli
from harnessc.spec import export_schema
from harnessc.spec.yamlsource import load_yaml

REPO = Path(__file__).resolve().parents[2]
AGENT_SPECS = sorted((REPO / "agents").glob("*.yaml"))


def test_build_check_passes_on_the_committed_tree(in_repo: Path) -> None:
    result = CliRunner().invoke(cli, ["build", "--check"])
    assert result.exit_code == 0, result.output
    assert result.stdout == f"{len(AGENT_SPECS)} generated files current\n"


def test_committed_schema_equals_the_export() -> None:
    committed = (REPO / "schema" / "agent.schema.json").read_text(encoding="utf-8")
    assert committed == export_schema(), "run `harnessc schema -o schema/agent.schema.json`"


@pytest.mark.parametrize("spec", AGENT_SPECS, ids=lambda p: p.stem)
def test_example_specs_validate_against_the_schema(spec: Path) -> None:
    schema = json.loads(export_schema())
    jsonschema.Draft202012Validator.check_schema(schema)
    data = load_yaml(spec.read_bytes(), spec.name).data
    jsonschema.Draft202012Validator(schema).validate(data)
    assert spec.read_text().startswith(
        "# yaml-language-server: $schema=../schema/agent.schema.json"
    )


def test_schema_rejects_what_the_models_reject() -> None:
    validator = jsonschema.Draft202012Validator(json.loads(export_schema()))
    base = {"version": 1, "name": "x", "models": {"m": {"provider": "openai", "id": "y"}}}
    assert validator.is_valid(base)
    for bad in (
        {**base, "version": 2},
        {**base, "modle": "m"},
        {**base, "tools": ["bassh"]},
        {**base, "tools": [{"bash": {}, "read": None}]},
        {**base, "hooks": {"tool_cal": []}},
        {**base, "budget": {"turns": -1}},
        {**base, "name": "Not Valid"},
    ):
        assert not validator.is_valid(bad), bad


def test_generated_code_is_ruff_clean(
    ruff: Callable[..., subprocess.CompletedProcess[str]],
) -> None:
    formatted = ruff("format", "--check", "generated")
    assert formatted.returncode == 0, formatted.stdout + formatted.stderr
    linted = ruff("check", "generated")
    assert linted.returncode == 0, linted.stdout + linted.stderr


def test_generated_code_passes_mypy() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "generated"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    own = [line for line in result.stdout.splitlines() if line.startswith("generated")]
    assert not own, result.stdout
