"""Model fallback with a typed result, against two real local model servers: the model
that answers is asked in its own mode and its answer is judged in that mode.

One model declares structured output (``auto`` is native there), the other does not
(``auto`` is the final_result tool there); each direction is run across the OpenAI
chat-completions and the Anthropic Messages wires, with ``retries: 0`` (a wrongly
judged answer would end the run ``output_invalid``) and with retries (it would cost an
extra model call).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest

from harnessc.runtime import AgentHarness, AgentHarnessOptions, Model
from harnessc.runtime.core.model_options import RetryOptions
from harnessc.runtime.core.options import AgentHarnessStreamOptions
from harnessc.runtime.options.typed_output import OutputConfig
from harnessc.runtime.providers.fallback import ModelFallback
from harnessc.runtime.session import Session
from harnessc.testing import ProtocolServer, ScriptedResponse
from harnessc.testing.streams import (
    AnthropicBlock,
    anthropic_events,
    openai_events,
    openai_tool_call_events,
)

SCHEMA = {
    "type": "object",
    "properties": {"verdict": {"type": "string", "enum": ["approve", "reject"]}},
    "required": ["verdict"],
    "additionalProperties": False,
}
GOOD = {"verdict": "approve"}
WIRES = {"openai": ("openai-completions", "/v1"), "anthropic": ("anthropic-messages", "")}


@pytest.fixture(scope="module")
def servers() -> Iterator[dict[str, ProtocolServer]]:
    with ProtocolServer() as first, ProtocolServer() as second:
        yield {"main": first, "backup": second}


@pytest.fixture(autouse=True)
def _fresh(servers: dict[str, ProtocolServer]) -> None:
    for server in servers.values():
        server.reset()


def _model(wire: str, url: str, model_id: str, structured: bool) -> Model:
    api, suffix = WIRES[wire]
    return Model(
        id=model_id,
        api=api,
        provider=wire,
        base_url=url + suffix,
        structured_output=structured,
    )


def _answer(wire: str, native: bool) -> ScriptedResponse:
    """The answer as the model gives it in its mode: JSON text (native) or a
    final_result call (tool)."""
    text = json.dumps(GOOD)
    if wire == "openai":
        if native:
            return ScriptedResponse.sse(openai_events([text]))
        return ScriptedResponse.sse(openai_tool_call_events([("call_1", "final_result", text)]))
    if native:
        return ScriptedResponse.sse(anthropic_events([AnthropicBlock("text", [text])]))
    return ScriptedResponse.sse(
        anthropic_events(
            [AnthropicBlock("tool_use", [text], id="call_1", name="final_result")],
            stop_reason="tool_use",
        )
    )


def _asked_native(wire: str, body: dict[str, Any]) -> bool:
    if wire == "openai":
        return body.get("response_format", {}).get("type") == "json_schema"
    return body.get("output_config", {}).get("format", {}).get("type") == "json_schema"


def _tool_names(wire: str, body: dict[str, Any]) -> list[str]:
    tools = body.get("tools") or []
    if wire == "openai":
        return [t["function"]["name"] for t in tools]
    return [t["name"] for t in tools]


async def _run(options: AgentHarnessOptions) -> Any:
    harness = AgentHarness(options)
    try:
        return await harness.prompt("review the plan")
    finally:
        await harness.close()


@pytest.mark.parametrize("retries", [0, 1])
@pytest.mark.parametrize(
    ("main_wire", "backup_wire", "main_native"),
    [
        ("openai", "anthropic", True),  # native first, the final_result tool after
        ("anthropic", "openai", True),
        ("openai", "anthropic", False),  # the final_result tool first, native after
        ("anthropic", "openai", False),
    ],
)
def test_the_fallback_model_is_asked_and_judged_in_its_own_mode(
    servers: dict[str, ProtocolServer],
    main_wire: str,
    backup_wire: str,
    main_native: bool,
    retries: int,
) -> None:
    main, backup = servers["main"], servers["backup"]
    failure = ScriptedResponse.error(503, "overloaded, try later")
    main.enqueue(failure, failure)  # the first try and its one retry
    backup_native = not main_native
    backup.enqueue(_answer(backup_wire, backup_native))
    options = AgentHarnessOptions(
        session=Session(),
        models={
            "main": _model(main_wire, main.url, "main-model", main_native),
            "backup": _model(backup_wire, backup.url, "backup-model", backup_native),
        },
        model="main",
        fallback=ModelFallback(["backup"]),
        stream_options=AgentHarnessStreamOptions(max_retries=1),
        retry=RetryOptions(base_delay_ms=1, jitter=0.0),
        system_prompt="You are a reviewer.",
        output=OutputConfig(schema=SCHEMA, retries=retries),
    )
    result = asyncio.run(_run(options))

    # each model was asked in its own mode
    first = main.requests[0].json
    assert _asked_native(main_wire, first) is main_native
    assert ("final_result" in _tool_names(main_wire, first)) is not main_native
    [asked] = [r.json for r in backup.requests]  # one call: the answer was taken
    assert _asked_native(backup_wire, asked) is backup_native
    assert ("final_result" in _tool_names(backup_wire, asked)) is not backup_native
    # and its answer judged in that mode
    assert result.status == "done", (result.status, result.reason)
    assert result.output == GOOD
