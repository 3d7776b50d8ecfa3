"""Seed 003's own config names (camelCase as in the seed, snake_case as in specs) and
harnessc's former names as aliases, in the runtime and in the spec alike (issue 14)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from harnessc.compiler.render import compile as compile_specs
from harnessc.runtime.extensions import TurnContinueExtension, TurnNudgeExtension
from harnessc.runtime.extensions.base import ExtensionConfigError
from harnessc.spec.load import parse_spec

SPEC = """\
version: 1
name: seeded
models:
  main: {provider: openai, id: gpt-4.1, api_key_env: OPENAI_API_KEY}
tools: [todo, finish]
extensions:
"""

SEED_NUDGE = {
    "stepInterval": 5,
    "timeIntervalMinutes": 2,
    "stepLimit": 50,
    "timeLimitMinutes": 30,
    "message": "[status] {steps} steps",
    "limitMessage": "[limit] {steps} steps, {elapsed}: wrap up",
}


def test_runtime_takes_the_seed_names() -> None:
    config = TurnNudgeExtension(SEED_NUDGE).config
    assert (config.step_interval, config.time_interval_minutes) == (5, 2)
    assert (config.step_limit, config.time_limit_minutes) == (50, 30)
    assert config.message == "[status] {steps} steps"
    assert config.limit_message == "[limit] {steps} steps, {elapsed}: wrap up"
    assert TurnNudgeExtension({"notice": "old {steps}"}).config.message == "old {steps}"
    assert TurnNudgeExtension({"limit_message": "x {steps}"}).config.limit_message == "x {steps}"
    with pytest.raises(ExtensionConfigError, match="given twice"):
        TurnNudgeExtension({"message": "a", "notice": "b"})
    continued = TurnContinueExtension(
        {
            "maxContinuations": 4,
            "continuePrompt": "go on",
            "requireFinish": True,
            "requireTodosDone": False,
            "stallLimit": 2,
            "noProgressLimit": 5,
        }
    ).config
    assert (continued.max_continuations, continued.continue_prompt) == (4, "go on")
    assert (continued.stall_limit, continued.no_progress_limit) == (2, 5)


def _yaml(extension: str, config: dict[str, Any]) -> str:
    body = "".join(f"\n    {key}: {value!r}" for key, value in config.items())
    return SPEC + f"  {extension}:{body}\n"


@pytest.mark.parametrize(
    ("extension", "config", "expected"),
    [
        ("turn_nudge", SEED_NUDGE, "message='[status] {steps} steps'"),
        ("turn_nudge", {"notice": "old {steps}"}, "message='old {steps}'"),
        ("turn_nudge", {"limit_message": "x {steps}"}, "limit_message='x {steps}'"),
        ("turn_continue", {"maxContinuations": 4, "noProgressLimit": 5}, "max_continuations=4"),
        ("compaction", {"contributeCommands": False, "reserveTokens": 100}, "reserve_tokens=100"),
        ("session_index", {"searchLimit": 7, "contributeCommands": False}, "search_limit=7"),
    ],
)
def test_specs_take_the_seed_names(
    tmp_path: Path, extension: str, config: dict[str, Any], expected: str
) -> None:
    loaded = parse_spec(_yaml(extension, config).encode(), tmp_path / "seeded.yaml")
    assert loaded.ok, [d.message for d in loaded.diagnostics]
    [module] = compile_specs(loaded, tmp_path).values()
    assert expected.replace("'", '"') in module or expected in module


def test_a_field_given_twice_in_a_spec_is_an_error(tmp_path: Path) -> None:
    text = _yaml("turn_nudge", {"message": "a {steps}", "notice": "b {steps}"})
    loaded = parse_spec(text.encode(), tmp_path / "seeded.yaml")
    assert not loaded.ok
    assert any("given twice (as 'message' and 'notice')" in d.message for d in loaded.diagnostics)


def test_runtime_refusals_point_at_the_key_as_written(tmp_path: Path) -> None:
    text = _yaml("turn_nudge", {"stepInterval": 5, "limitMessage": "{remaining} left"})
    loaded = parse_spec(text.encode(), tmp_path / "seeded.yaml")
    [error] = [d for d in loaded.diagnostics if d.severity == "error"]
    assert "unknown placeholder(s) remaining" in error.message
    assert text.splitlines()[error.line - 1].strip().startswith("limitMessage:")
