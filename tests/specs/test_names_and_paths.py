"""Items 11 and 12: an agent name that shadows a runtime dependency, and paths with a
component over 255 bytes, are diagnostics (never "internal error: OSError")."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from harnessc.spec import parse_spec
from harnessc.spec.pathnames import runtime_modules

LONG = "x" * 300


def _messages(tmp_path: Path, spec: dict) -> list[str]:
    agents = tmp_path / "agents"
    agents.mkdir(exist_ok=True)
    file = agents / "a.yaml"
    raw = yaml.safe_dump(spec).encode()
    file.write_bytes(raw)
    loaded = parse_spec(raw, file, "agents/a.yaml")
    return [d.format() for d in loaded.diagnostics]


def _spec(**fields: object) -> dict:
    base: dict = {
        "version": 1,
        "name": "fine",
        "models": {"main": {"provider": "openai", "id": "m", "api_key_env": "OPENAI_API_KEY"}},
    }
    base.update(fields)
    return base


def test_runtime_modules_come_from_the_installed_metadata() -> None:
    modules = runtime_modules()
    for name in ("httpx", "pydantic", "yaml", "click", "anyio", "h11", "idna", "certifi", "jinja2"):
        assert name in modules, name
    assert modules["yaml"] == "PyYAML"
    assert "harnessc" not in modules


@pytest.mark.parametrize("name", ["httpx", "pydantic", "yaml", "click", "anyio", "h11", "idna"])
def test_a_name_shadowing_a_dependency_is_refused(tmp_path: Path, name: str) -> None:
    messages = _messages(tmp_path, _spec(name=name))
    assert any(
        f"agent name {name!r} would compile to {name}.py, which shadows the module" in m
        and "error" in m
        for m in messages
    ), messages


def test_a_dashed_name_is_checked_as_its_module(tmp_path: Path) -> None:
    messages = _messages(tmp_path, _spec(name="typing-extensions"))
    assert any("shadows the module 'typing_extensions'" in m for m in messages), messages


@pytest.mark.parametrize(
    ("fields", "where"),
    [
        ({"resources": {"skills": [LONG]}}, "skills folder"),
        ({"resources": {"prompt_templates": [f"{LONG}/t"]}}, "prompt templates folder"),
        ({"hooks": {"tool_call": [{"command": f"hooks/{LONG}.sh"}]}}, "hook program"),
        ({"hooks": {"tool_call": [{"command": f"{LONG}/run"}]}}, "hook program"),
        ({"hooks": {"tool_call": [{"python": f"{LONG}:f"}]}}, "module"),
        ({"tools": [{"python": f"pkg.{LONG}:f"}]}, "module"),
    ],
)
def test_an_overlong_path_component_is_a_diagnostic(
    tmp_path: Path, fields: dict, where: str
) -> None:
    messages = _messages(tmp_path, _spec(**fields))
    assert any(
        where in m and "has a component of" in m and "at most 255 bytes" in m for m in messages
    ), messages
    assert not any("internal error" in m for m in messages)


@pytest.mark.parametrize(
    ("context", "message"),
    [
        ({"env_passthrough": [1, 2]}, "tool_context.env_passthrough: expected a list"),
        ({"workspace": 3}, "tool_context.workspace: expected a path"),
        ({"workspace": LONG}, "tool_context.workspace 'xxx"),
        ({"allow_outside_workspace": [True]}, "tool_context.allow_outside_workspace: expected"),
    ],
)
def test_tool_context_keys_of_the_file_tools_are_checked(
    tmp_path: Path, context: dict, message: str
) -> None:
    messages = _messages(tmp_path, _spec(tool_context=context))
    assert any(message in m and "error" in m for m in messages), messages


def test_good_tool_context_passes(tmp_path: Path) -> None:
    context = {
        "workspace": ".",
        "env_passthrough": ["GITHUB_TOKEN"],
        "allow_outside_workspace": False,
    }
    assert _messages(tmp_path, _spec(tool_context=context)) == []
