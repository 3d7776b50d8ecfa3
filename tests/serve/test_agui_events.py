"""A run's events are encoded once, as they come; the AG-UI door decodes only the ones it
turns into AG-UI events (a tool step's other events are passed over by their type)."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from harnessc.runtime.core.events import (
    AgentStartEvent,
    MessageEndEvent,
    MessageStartEvent,
    MessageUpdateEvent,
    StateChangeEvent,
    ToolExecutionEndEvent,
    ToolExecutionStartEvent,
    TurnEndEvent,
    TurnStartEvent,
)
from harnessc.runtime.core.messages import (
    AssistantMessage,
    TextContent,
    ToolCall,
    ToolResultMessage,
)
from harnessc.runtime.runs.run import Run, encode_event, encode_event_data, event_type

core = pytest.importorskip("ag_ui.core")


def _step(run: Run, n: int) -> None:
    """One tool step's events, as the harness emits them, then a streamed answer."""
    call = ToolCall(id=f"call_{n}", name="add", arguments={"a": n, "b": 1})
    reply = AssistantMessage(content=[call])
    run.add(TurnStartEvent(turn=n))
    run.add(StateChangeEvent())
    run.add(MessageStartEvent(message=reply))
    run.add(MessageUpdateEvent(delta_type="toolcall_delta", delta="{}", message=reply))
    run.add(MessageEndEvent(message=reply))
    run.add(ToolExecutionStartEvent(tool_call_id=call.id, tool_name="add", args=call.arguments))
    result = ToolResultMessage(call.id, "add", content=[TextContent(str(n + 1))])
    run.add(ToolExecutionEndEvent(tool_call_id=call.id, tool_name="add", result=result))
    run.add(TurnEndEvent(turn=n, message=reply, tool_results=[result]))


def test_the_agui_door_decodes_only_the_events_it_translates() -> None:
    from harnessc.runtime.serve.agui import _Translator

    run = Run("run-1")
    run.add(AgentStartEvent(prompt="add"))
    for n in range(3):
        _step(run, n)
    answer = AssistantMessage(content=[TextContent("done: 3")])
    run.add(MessageUpdateEvent(delta_type="text_delta", delta="done: 3", message=answer))
    run.add(MessageEndEvent(message=answer))
    translator = _Translator(run, core)
    decoded: list[str] = []
    decode = getattr(translator, "decode", json.loads)

    def counting(encoded: str) -> Any:
        decoded.append(encoded)
        return decode(encoded)

    translator.decode = counting
    out = [e for i, encoded in enumerate(run.events) for e in translator.translate(encoded, i)]
    out += translator.close()
    kinds = [e.type.value for e in out]
    assert kinds == [
        *(["TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "TOOL_CALL_RESULT"] * 3),
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
    ]
    assert [e.content for e in out if e.type.value == "TOOL_CALL_RESULT"] == ["1", "2", "3"]
    # 4 of a step's 8 events become AG-UI events; the others are never decoded
    types = [json.loads(e)["type"] for e in decoded]
    assert len(decoded) == 3 * 3 + 2 < len(run.events) == 1 + 3 * 8 + 2
    assert set(types) == {"message_update", "message_end", "tool_execution_end"}


def test_an_event_is_encoded_once_as_its_dict() -> None:
    call = ToolCall(id="c", name="add", arguments={"a": 1, "é": "ü"})
    event = MessageEndEvent(message=AssistantMessage(content=[call]))
    encoded = encode_event(event)
    assert json.loads(encoded) == json.loads(json.dumps(event.to_dict()))
    assert event_type(encoded) == "message_end" and "ü" in encoded  # not \\u-escaped
    # a value JSON has no form for: its str (as json's default=str gives)
    assert json.loads(encode_event_data({"type": "x", "v": set}))["v"] == str(set)
    assert json.loads(encode_event_data({"type": "x", "n": math.nan}))["n"] is None
    assert event_type('{"seq":1,"type":"x"}') is None  # not at the start: decoded whole
