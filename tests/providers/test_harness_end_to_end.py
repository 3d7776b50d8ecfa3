"""An AgentHarness talking to the local protocol server through the real provider."""

from __future__ import annotations

import json
from typing import Any

from harnessc.runtime import AgentHarness, AgentHarnessOptions, EventLog
from harnessc.runtime.core.options import AgentHarnessStreamOptions, Model, RetryOptions
from harnessc.runtime.tools.base import Tool, ToolResult, text_result
from harnessc.testing import ScriptedResponse, openai_events, openai_tool_call_events

ADD_SCHEMA = {
    "type": "object",
    "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
    "required": ["a", "b"],
}


async def _add(
    call_id: str, params: dict[str, Any], signal: Any, on_update: Any, ctx: Any
) -> ToolResult:
    return text_result(str(params["a"] + params["b"]))


def test_harness_streams_retries_and_runs_tools(server):
    server.enqueue(
        ScriptedResponse.error(429, "Rate limit reached", headers={"retry-after": "0"}),
        ScriptedResponse.sse(
            openai_tool_call_events([("call_1", "add", json.dumps({"a": 2, "b": 3}))], pieces=4)
        ),
        ScriptedResponse.sse(openai_events(["The sum ", "is 5."])),
    )
    model = Model(
        id="local-model",
        api="openai-completions",
        provider="local",
        base_url=server.url + "/v1",
        api_key_env="HARNESSC_TEST_KEY",
    )
    harness = AgentHarness(
        AgentHarnessOptions(
            models={"main": model},
            model="main",
            tools=[Tool("add", "Add two integers.", ADD_SCHEMA, _add)],
            system_prompt="You add numbers.",
            stream_options=AgentHarnessStreamOptions(max_retries=2, timeout_ms=5000),
            retry=RetryOptions(base_delay_ms=1),
        )
    )
    log = EventLog()
    harness.subscribe(log)

    def mark_payload(event: Any) -> dict[str, Any]:
        return {"payload": {**event.payload, "temperature": 0}}

    harness.on("before_provider_payload", mark_payload)

    result = harness.prompt_sync("What is 2 + 3?")

    assert result.status == "done"
    events = list(log)
    retries = [e for e in events if e.type == "retry"]
    assert [(e.attempt, e.status, e.delay_ms) for e in retries] == [(1, 429, 0)]
    assert [e.status for e in events if e.type == "provider_response"] == [429, 200, 200]
    updates = [e for e in events if e.type == "message_update"]
    assert [e.delta for e in updates if e.delta_type == "text_delta"] == ["The sum ", "is 5."]
    assert sum(e.delta_type == "toolcall_delta" for e in updates) == 4
    tool_ends = [e for e in events if e.type == "tool_execution_end"]
    assert len(tool_ends) == 1

    requests = server.requests
    assert len(requests) == 3
    assert all(r.json["temperature"] == 0 for r in requests)
    last = requests[-1].json["messages"]
    assert last[0] == {"role": "system", "content": "You add numbers."}
    assert last[-1] == {"role": "tool", "tool_call_id": "call_1", "content": "5"}
    final = harness.messages[-1]
    assert final.role == "assistant" and final.text == "The sum is 5."  # type: ignore[union-attr]
