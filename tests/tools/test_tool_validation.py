"""Tool-argument validation: pi's coercion first, then a real JSON Schema validator
(oneOf, $ref, pattern, format, exclusiveMinimum); deep nesting is an error result."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from harnessc.runtime import AgentHarness, AgentHarnessOptions, Model, ToolResultMessage
from harnessc.runtime.session import JsonlSessionRepo
from harnessc.runtime.tools.base import Tool, ToolResult, text_result
from harnessc.runtime.tools.validation import MAX_ARGUMENT_DEPTH, argument_depth, validate_arguments
from harnessc.testing import ProtocolServer, ScriptedResponse, openai_events
from harnessc.testing.streams import openai_tool_call_events

SCHEMA: dict[str, Any] = {
    "type": "object",
    "$defs": {"Positive": {"type": "integer", "exclusiveMinimum": 0}},
    "properties": {
        "count": {"$ref": "#/$defs/Positive"},
        "ratio": {"type": "number", "exclusiveMinimum": 0, "maximum": 1},
        "flag": {"type": "boolean"},
        "id": {"type": "string", "pattern": "^[a-z]+-[0-9]+$"},
        "mail": {"type": "string", "format": "email"},
        "value": {"oneOf": [{"type": "integer"}, {"type": "number", "multipleOf": 0.5}]},
        "tags": {"type": "array", "items": {"$ref": "#/$defs/Positive"}},
    },
    "additionalProperties": False,
}


@pytest.mark.parametrize(
    ("arguments", "coerced"),
    [
        ({"count": "3"}, {"count": 3}),  # through a $ref
        ({"ratio": "0.25", "flag": "true"}, {"ratio": 0.25, "flag": True}),
        ({"tags": ["1", 2, "3"]}, {"tags": [1, 2, 3]}),
        ({"count": 4.0}, {"count": 4}),
        ({"id": "ab-12", "mail": "a@b.org", "value": 1.5}, None),
    ],
)
def test_valid_and_coerced(arguments: dict[str, Any], coerced: dict[str, Any] | None) -> None:
    value, errors = validate_arguments(arguments, SCHEMA)
    assert errors == []
    assert value == (coerced if coerced is not None else arguments)


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"count": 0}, "count: must be bigger than 0"),  # exclusiveMinimum through $ref
        ({"count": "0"}, "count: must be bigger than 0"),  # coerced first, then checked
        ({"ratio": 0}, "ratio: must be bigger than 0"),
        ({"id": "AB"}, "id: must match pattern"),
        ({"mail": "not an address"}, "mail: must be email"),
        ({"value": 2}, "value: must be valid exactly by one definition"),  # oneOf, not anyOf
        ({"tags": [1, "x"]}, "tags[1]: expected integer, got string"),
        ({"other": 1}, "other: unexpected property"),
    ],
)
def test_refused_with_a_readable_reason(arguments: dict[str, Any], message: str) -> None:
    _, errors = validate_arguments(arguments, SCHEMA)
    assert errors and errors[0].startswith(message), errors


def _nested(depth: int) -> dict[str, Any]:
    root: dict[str, Any] = {}
    node = root
    for _ in range(depth - 1):
        node["a"] = {}
        node = node["a"]
    return root


def test_deep_nesting_is_an_error_not_a_recursion_error() -> None:
    deep = {"x": _nested(5000)}
    assert argument_depth(deep) > MAX_ARGUMENT_DEPTH
    _, errors = validate_arguments(deep, {"type": "object"})
    assert errors and "nested more than 100 levels" in errors[0]
    _, fine = validate_arguments({"x": _nested(50)}, {"type": "object"})
    assert fine == []


async def _echo(call_id: str, params: dict[str, Any], *_: Any) -> ToolResult:
    return text_result("ran")


def test_deep_tool_arguments_end_to_end(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """600 levels through the OpenAI wire API: the model gets an error result it can read,
    the reply is recorded, and the session stays valid."""
    monkeypatch.setenv("DEEP_KEY", "k")
    arguments = json.dumps({"x": _nested(600)})
    tool = Tool("echo", "Echo.", {"type": "object"}, _echo)
    with ProtocolServer() as server:
        server.enqueue(
            ScriptedResponse.sse(openai_tool_call_events([("call_1", "echo", arguments)])),
            ScriptedResponse.sse(openai_events(["ok"])),
        )
        session = JsonlSessionRepo(tmp_path / "s").create(cwd=str(tmp_path))
        model = Model(
            id="m",
            api="openai-completions",
            base_url=server.url + "/v1",
            api_key_env="DEEP_KEY",
        )
        harness = AgentHarness(
            AgentHarnessOptions(session=session, models={"main": model}, tools=[tool])
        )
        result = asyncio.run(harness.prompt("go"))
        second = server.requests[1].json
    assert result.status == "done", result.reason
    results = [m for m in harness.messages if isinstance(m, ToolResultMessage)]
    assert results and results[0].is_error and "100 levels" in results[0].text
    assert any(m.get("role") == "tool" and "100 levels" in m["content"] for m in second["messages"])
    harness.session.close()
    reopened = JsonlSessionRepo(tmp_path / "s").open(session.path, read_only=True)
    try:
        assert reopened.diagnostics == []
        assert len(reopened.context().messages) == 4
    finally:
        reopened.close()
