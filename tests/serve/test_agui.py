"""AG-UI over ``--serve``: a RunAgentInput in, events parsed by ag-ui-protocol's models."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import TypeAdapter

from harnessc.runtime.permissions.shown_args import fingerprint

from .servekit import Served

core = pytest.importorskip("ag_ui.core")

_EVENTS: TypeAdapter[Any] = TypeAdapter(core.Event)


def _run(server: Served, body: dict[str, Any]) -> list[Any]:
    with server.client() as client:
        with client.stream(
            "POST", "/agui", json=body, headers={"Accept": "text/event-stream"}
        ) as r:
            assert r.status_code == 200, r.read()
            events = [
                _EVENTS.validate_python(json.loads(line[5:]))
                for line in r.iter_lines()
                if line.startswith("data:")
            ]
    return events


def _input(thread: str, run: str, messages: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {
        "threadId": thread,
        "runId": run,
        "state": extra.pop("state", {}),
        "messages": messages,
        "tools": extra.pop("tools", []),
        "context": extra.pop("context", []),
        "forwardedProps": {},
        **extra,
    }


def test_a_run_streams_text_message_events_between_run_started_and_finished(
    server: Served,
) -> None:
    events = _run(
        server,
        _input(
            "thread-1",
            "run-1",
            [{"id": "u1", "role": "user", "content": "hi agui"}],
            state={"step": 1},
        ),
    )
    kinds = [e.type.value for e in events]
    assert kinds[0] == "RUN_STARTED" and kinds[-1] == "RUN_FINISHED"
    assert events[0].thread_id == "thread-1" and events[0].run_id == "run-1"
    assert kinds[1] == "STATE_SNAPSHOT" and events[1].snapshot == {"step": 1}
    assert kinds.count("TEXT_MESSAGE_START") == 1 and kinds.count("TEXT_MESSAGE_END") == 1
    text = "".join(e.delta for e in events if e.type.value == "TEXT_MESSAGE_CONTENT")
    assert text == "echo: hi agui"
    assert events[-1].result == "echo: hi agui"


def test_a_front_end_tool_ends_the_run_and_its_result_continues_the_thread(
    server: Served,
) -> None:
    tool = {
        "name": "pick_colour",
        "description": "Let the user pick a colour.",
        "parameters": {"type": "object", "properties": {"hint": {"type": "string"}}},
    }
    prompt = {"id": "u1", "role": "user", "content": 'call pick_colour {"hint": "warm"}'}
    events = _run(server, _input("thread-2", "run-a", [prompt], tools=[tool]))
    kinds = [e.type.value for e in events]
    assert ["TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END"] == [
        k for k in kinds if k.startswith("TOOL_CALL")
    ]
    start = next(e for e in events if e.type.value == "TOOL_CALL_START")
    assert start.tool_call_name == "pick_colour"
    args = next(e for e in events if e.type.value == "TOOL_CALL_ARGS")
    assert json.loads(args.delta) == {"hint": "warm"}
    finished = events[-1]
    assert finished.type.value == "RUN_FINISHED"
    assert finished.outcome.pending_tool_call_ids == [start.tool_call_id]
    answer = {"id": "t1", "role": "tool", "toolCallId": start.tool_call_id, "content": "amber"}
    events = _run(server, _input("thread-2", "run-b", [prompt, answer], tools=[tool]))
    assert events[0].run_id == "run-b"
    text = "".join(e.delta for e in events if e.type.value == "TEXT_MESSAGE_CONTENT")
    assert text == "done: amber"
    assert events[-1].type.value == "RUN_FINISHED" and events[-1].result == "done: amber"


def test_a_local_tool_result_and_a_permission_interrupt(server: Served) -> None:
    prompt = {"id": "u1", "role": "user", "content": 'call bash {"command": "echo from-agui"}'}
    events = _run(server, _input("thread-3", "run-1", [prompt]))
    finished = events[-1]
    [interrupt] = finished.outcome.interrupts
    assert interrupt.reason == "permission"
    shown = interrupt.metadata
    assert shown["arguments"] == {"command": "echo from-agui"}
    assert shown["fingerprint"] == fingerprint("bash", shown["arguments"])
    # a resolution given for other arguments than the call holds is refused
    stale = {"fingerprint": fingerprint("bash", {"command": "touch pwned"})}
    with server.client() as client:
        refused = client.post(
            "/agui",
            json=_input(
                "thread-3",
                "run-2",
                [prompt],
                resume=[{"interruptId": interrupt.id, "status": "resolved", "payload": stale}],
            ),
            headers={"Accept": "text/event-stream"},
        )
    assert refused.status_code == 409 and "not the one that was shown" in refused.text
    events = _run(
        server,
        _input(
            "thread-3",
            "run-2",
            [prompt],
            resume=[
                {
                    "interruptId": interrupt.id,
                    "status": "resolved",
                    "payload": {"fingerprint": shown["fingerprint"]},
                }
            ],
        ),
    )
    result = next(e for e in events if e.type.value == "TOOL_CALL_RESULT")
    assert "from-agui" in result.content
    assert events[-1].type.value == "RUN_FINISHED"


def test_a_failed_run_ends_with_run_error(server: Served) -> None:
    events = _run(
        server, _input("thread-4", "run-1", [{"id": "u1", "role": "user", "content": "fail"}])
    )
    assert events[0].type.value == "RUN_STARTED"
    assert events[-1].type.value == "RUN_ERROR"
    assert "refuses" in events[-1].message


def test_a_bad_input_is_a_400_naming_the_field(server: Served) -> None:
    with server.client() as client:
        answer = client.post("/agui", json={"threadId": 5})
    assert answer.status_code == 400
    assert "RunAgentInput" in answer.json()["error"]["message"]
