"""A run's events are encoded once, as they come; the AG-UI door decodes only the ones it
turns into AG-UI events (a tool step's other events are passed over by their type)."""

from __future__ import annotations

import asyncio
import json
import math
from typing import Any

import pytest
from ag_ui.encoder import EventEncoder

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
    translator = _Translator(run, core, EventEncoder())
    decoded: list[str] = []
    decode = getattr(translator, "decode", json.loads)

    def counting(encoded: str) -> Any:
        decoded.append(encoded)
        return decode(encoded)

    translator.decode = counting
    frames: list[str] = []
    for i, encoded in enumerate(run.events):
        translator.translate(encoded, i, frames)
    translator.close(frames)
    out = [_parsed(frame) for frame in frames]
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


def _parsed(frame: str) -> Any:
    """An SSE frame as the ag-ui-protocol model of its type, checking that the frame is
    byte for byte what that model and the protocol's own encoder write."""
    from ag_ui.core import events
    from ag_ui.encoder import EventEncoder
    from pydantic import TypeAdapter

    assert frame.startswith("data: ") and frame.endswith("\n\n") and frame.count("\n") == 2
    event = TypeAdapter(events.Event).validate_json(frame[6:-2])
    assert EventEncoder().encode(event) == frame
    return event


def test_the_frequent_agui_events_are_written_as_the_protocols_encoder_writes_them() -> None:
    """RUN_STARTED, text, tool calls and a finished run's RUN_FINISHED are written from
    dicts (no pydantic model per event): the same bytes as the protocol's models give."""
    from ag_ui.encoder import EventEncoder

    from harnessc.runtime.serve.agui import _frame, _last_event, _Translator

    run = Run("run-3")
    _step(run, 0)
    # text streamed with a tool call after it (the call's parent is the message), and
    # characters JSON escapes or not
    reply = AssistantMessage(
        content=[TextContent('é "q" \\ \n \u2028 <b>'), ToolCall("c9", "add", {})]
    )
    run.add(MessageUpdateEvent(delta_type="text_delta", delta='é "q" \\ \n', message=reply))
    run.add(MessageUpdateEvent(delta_type="text_delta", delta=" \u2028 <b>", message=reply))
    run.add(MessageEndEvent(message=reply))
    # recorded whole (a durable run's): no deltas before its end
    run.add(MessageEndEvent(message=AssistantMessage(content=[TextContent("whole")])))
    translator = _Translator(run, core, EventEncoder())
    frames = [_frame({"type": "RUN_STARTED", "threadId": "t", "runId": "r"})]
    for i, encoded in enumerate(run.events):
        translator.translate(encoded, i, frames)
    translator.close(frames)
    kinds = [_parsed(frame).type.value for frame in frames]
    assert kinds.count("TEXT_MESSAGE_START") == kinds.count("TEXT_MESSAGE_END") == 2
    assert kinds.count("TOOL_CALL_START") == 2 and kinds[0] == "RUN_STARTED"
    given = core.RunAgentInput(
        thread_id="t", run_id="r", state={}, messages=[], tools=[], context=[], forwarded_props={}
    )
    run.usage.input, run.usage.output, run.usage.cache_read, run.usage.cost = 7, 3, 2, 1.5e-7
    for status, output in (("done", None), ("done", {"n": [1, 2.5, None]}), ("done", 0)):
        run.status, run.text, run.output = status, "the answer", output
        last = _parsed(_last_event(core, run, given, EventEncoder()))
        assert last.result == ("the answer" if output is None else output)
        assert last.usage[0].input_tokens == 9 and last.metadata == {"cost_usd": 1.5e-7}
    run.text, run.output = "", None
    assert _parsed(_last_event(core, run, given, EventEncoder())).result == ""


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


def test_a_runs_last_events_go_out_with_run_finished_in_one_write() -> None:
    """Each yielded piece is one write to the socket: RUN_STARTED with the state
    snapshot, then the events of a run that has ended together with RUN_FINISHED."""
    from ag_ui.encoder import EventEncoder

    from harnessc.runtime.runs.run import follow
    from harnessc.runtime.serve.agui import _stream

    run = Run("run-2")
    run.add(AgentStartEvent(prompt="add"))
    _step(run, 0)
    answer = AssistantMessage(content=[TextContent("done: 1")])
    run.add(MessageUpdateEvent(delta_type="text_delta", delta="done: 1", message=answer))
    run.add(MessageEndEvent(message=answer))
    run.text, run.status = "done: 1", "done"

    class Runs:
        def events(self, run: Run, after: int = 0) -> Any:
            return follow(run, after)

    given = core.RunAgentInput(
        thread_id="t",
        run_id="r",
        state={"step": 1},
        messages=[],
        tools=[],
        context=[],
        forwarded_props={},
    )

    async def writes() -> list[str]:
        return [piece async for piece in _stream(Runs(), run, 0, given, EventEncoder())]  # type: ignore[arg-type]

    pieces = asyncio.run(writes())
    kinds = [
        [json.loads(line[5:])["type"] for line in p.split("\n") if line.startswith("data:")]
        for p in pieces
    ]
    assert kinds == [
        ["RUN_STARTED", "STATE_SNAPSHOT"],
        [
            "TOOL_CALL_START",
            "TOOL_CALL_ARGS",
            "TOOL_CALL_END",
            "TOOL_CALL_RESULT",
            "TEXT_MESSAGE_START",
            "TEXT_MESSAGE_CONTENT",
            "TEXT_MESSAGE_END",
            "RUN_FINISHED",
        ],
    ]
