"""Issue 40 through the served doors of a plain agent: a typed value, usage and errors,
a stream that says its text once, A2A's cancel of a paused task, AG-UI's front-end
tools under ``default: ask`` and threads in memory. Real clients: ``openai``,
LangChain's ChatOpenAI, the a2a-sdk client, AG-UI events parsed by ag-ui-protocol."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harnessc.testing import ProtocolServer

from .servekit import AgentKit, Served, compile_agent, wait_status
from .typedkit import PLAIN_SPEC, STOP_HOOK, TYPED_SPEC, VALUE, model_reply, saw

openai = pytest.importorskip("openai")


@pytest.fixture(scope="module")
def model() -> Iterator[ProtocolServer]:
    with ProtocolServer() as running:
        running.set_handler(model_reply)
        yield running


def _kit(tmp: Path, url: str, spec: str) -> AgentKit:
    kit = compile_agent(tmp, url, spec)
    (kit.module.parent.parent / "spec" / "stophook.py").write_text(STOP_HOOK)
    return kit


@pytest.fixture(scope="module")
def kits(
    tmp_path_factory: pytest.TempPathFactory, model: ProtocolServer
) -> Iterator[dict[str, AgentKit]]:
    made = {
        "typed": _kit(tmp_path_factory.mktemp("typed"), model.url, TYPED_SPEC),
        "plain": _kit(tmp_path_factory.mktemp("plain"), model.url, PLAIN_SPEC),
    }
    try:
        yield made
    finally:
        for kit in made.values():
            kit.stop()


@pytest.fixture(scope="module")
def typed(kits: dict[str, AgentKit]) -> Served:
    """The typed agent, served with a token."""
    return kits["typed"].serve()


@pytest.fixture(scope="module")
def plain(kits: dict[str, AgentKit]) -> Served:
    """The agent without typed output (``default: ask``, the before_stop hook)."""
    return kits["plain"].serve()


@pytest.fixture(scope="module")
def memory(kits: dict[str, AgentKit]) -> Served:
    """The same agent with its sessions in memory (``--no-session``)."""
    return kits["plain"].serve("--no-session")


def _openai(server: Served) -> Any:
    return openai.OpenAI(base_url=f"{server.url}/v1", api_key=server.token or "x", max_retries=0)


# -- 2: a typed value through every served door ------------------------------------------


def test_the_native_run_object_has_the_typed_value_and_the_usage(typed: Served) -> None:
    with typed.client() as client:
        run_id = client.post("/v1/runs", json={"prompt": "verdict please"}).json()["run_id"]
        done = wait_status(client, run_id, "done", "error")
    assert done["status"] == "done" and done["reason"] == "final_result", done
    assert done["output"] == VALUE
    assert done["usage"]["input_tokens"] == 10 and done["usage"]["output_tokens"] == 5
    assert done["usage"]["turns"] == 1


@pytest.mark.parametrize("stream", [False, True])
def test_openai_content_is_the_typed_value_as_json_text(typed: Served, stream: bool) -> None:
    client = _openai(typed)
    messages = [{"role": "user", "content": "verdict in json"}]
    if stream:
        chunks = list(
            client.chat.completions.create(model="helper", messages=messages, stream=True)
        )
        content = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    else:
        reply = client.chat.completions.create(model="helper", messages=messages)
        content = reply.choices[0].message.content
    assert json.loads(content) == VALUE


def test_a2a_answers_a_typed_agent_with_a_data_part(typed: Served) -> None:
    pytest.importorskip("a2a.client")
    from a2a.helpers import get_data_parts
    from a2a.types import a2a_pb2 as a2a

    from .test_a2a import _send

    items = asyncio.run(_send(typed, "verdict over a2a", streaming=False))
    task = next(i.task for i in reversed(items) if i.HasField("task"))
    assert task.status.state == a2a.TaskState.TASK_STATE_COMPLETED
    [artifact] = task.artifacts
    [data] = get_data_parts(artifact.parts)
    assert data == {"verdict": "approve", "score": 7.0}  # protobuf numbers are doubles


def test_agui_run_finished_carries_the_typed_value_and_usage(typed: Served) -> None:
    pytest.importorskip("ag_ui.core")
    from .test_agui import _input, _run

    body = _input("t-typed", "r-1", [{"id": "u1", "role": "user", "content": "verdict agui"}])
    events = _run(typed, body)
    finished = events[-1]
    assert finished.type.value == "RUN_FINISHED"
    assert finished.result == VALUE
    [usage] = finished.usage
    assert (usage.input_tokens, usage.output_tokens) == (10, 5)


# -- 4: usage on the OpenAI endpoint, errors with code and param ---------------------


def test_openai_usage_streamed_and_not_with_the_official_client(typed: Served) -> None:
    client = _openai(typed)
    prompt = [{"role": "user", "content": 'call ask_human {"question": "q"}'}]
    reply = client.chat.completions.create(model="helper", messages=prompt)
    # one tool call: 20 prompt tokens (4 cached), 10 completion tokens
    assert reply.usage is not None
    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens) == (20, 10)
    assert reply.usage.total_tokens == 30
    assert reply.usage.prompt_tokens_details.cached_tokens == 4
    chunks = list(
        client.chat.completions.create(
            model="helper",
            messages=[{"role": "user", "content": "verdict streamed"}],
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    last = chunks[-1]
    assert last.choices == [] and last.usage is not None
    assert (last.usage.prompt_tokens, last.usage.completion_tokens) == (10, 5)
    assert all(c.usage is None for c in chunks[:-1])
    plain = list(
        client.chat.completions.create(
            model="helper", messages=[{"role": "user", "content": "verdict"}], stream=True
        )
    )
    assert all(getattr(c, "usage", None) is None for c in plain)


def test_langchain_reads_the_usage_metadata(typed: Served) -> None:
    pytest.importorskip("langchain_openai")
    from langchain_openai import ChatOpenAI

    chat = ChatOpenAI(
        model="helper", base_url=f"{typed.url}/v1", api_key=typed.token, max_retries=0
    )
    message = chat.invoke("verdict from langchain")
    assert json.loads(str(message.content)) == VALUE
    assert message.usage_metadata is not None
    assert message.usage_metadata["input_tokens"] == 10
    assert message.usage_metadata["output_tokens"] == 5
    streaming = ChatOpenAI(
        model="helper",
        base_url=f"{typed.url}/v1",
        api_key=typed.token,
        max_retries=0,
        stream_usage=True,
    )
    total = None
    for chunk in streaming.stream("verdict streamed by langchain"):
        total = chunk if total is None else total + chunk
    assert total is not None and total.usage_metadata is not None
    assert total.usage_metadata["input_tokens"] == 10


def test_openai_errors_have_a_code_and_a_param(typed: Served) -> None:
    client = _openai(typed)
    with pytest.raises(openai.NotFoundError) as missing:
        client.chat.completions.create(model="gpt-x", messages=[{"role": "user", "content": "x"}])
    assert missing.value.code == "model_not_found" and missing.value.param == "model"
    with pytest.raises(openai.BadRequestError) as empty:
        client.chat.completions.create(model="helper", messages=[])
    assert empty.value.param == "messages" and empty.value.code
    with typed.client() as http:
        body = http.post("/v1/chat/completions", json={"model": "helper"}).json()
    assert (
        body["error"]["param"] == "messages"
        and body["error"]["code"] == "missing_required_parameter"
    )


# -- 5: the stream says the final text once ------------------------------------------


def test_a_stream_says_the_final_text_once(plain: Served, model: ProtocolServer) -> None:
    client = _openai(plain)
    messages = [{"role": "user", "content": "twice please"}]
    reply = client.chat.completions.create(model="helper", messages=messages)
    assert reply.choices[0].message.content == "echo: finally"  # the run's final text
    assert saw(model.requests, "finally")  # the hook made the first reply go on
    chunks = list(client.chat.completions.create(model="helper", messages=messages, stream=True))
    streamed = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert streamed == "echo: finally"


# -- 6: A2A cancel of a paused task --------------------------------------------------


def test_a2a_cancel_of_an_input_required_task_answers_it_canceled(typed: Served) -> None:
    pytest.importorskip("a2a.client")
    from a2a.types import a2a_pb2 as a2a

    from .test_a2a import _final_state, _send

    items = asyncio.run(_send(typed, 'call bash {"command": "echo never"}', streaming=False))
    state, _, task_id = _final_state(items)
    assert state == a2a.TaskState.TASK_STATE_INPUT_REQUIRED
    canceled = asyncio.run(_cancel(typed, task_id))
    assert canceled.status.state == a2a.TaskState.TASK_STATE_CANCELED
    again = asyncio.run(_cancel(typed, task_id, expect_error=True))
    assert "cancel" in str(again).lower()  # an ended task: TaskNotCancelable


async def _cancel(server: Served, task_id: str, *, expect_error: bool = False) -> Any:
    import httpx
    from a2a.client import ClientConfig, create_client
    from a2a.types import a2a_pb2 as a2a

    async with httpx.AsyncClient(headers=server.headers, timeout=30) as http:
        client = await create_client(server.url, client_config=ClientConfig(httpx_client=http))
        try:
            return await client.cancel_task(a2a.CancelTaskRequest(id=task_id))
        except Exception as exc:
            if expect_error:
                return exc
            raise
        finally:
            await client.close()


# -- 13: AG-UI front-end tools under default: ask ------------------------------------

_PICK = {
    "name": "pick_colour",
    "description": "Let the user pick a colour.",
    "parameters": {"type": "object", "properties": {"hint": {"type": "string"}}},
}


def test_agui_front_end_tool_under_default_ask_is_a_pending_tool_call(plain: Served) -> None:
    pytest.importorskip("ag_ui.core")
    from .test_agui import _input, _run

    prompt = {"id": "u1", "role": "user", "content": 'call pick_colour {"hint": "warm"}'}
    thread = f"ask-{uuid.uuid4().hex[:6]}"
    events = _run(plain, _input(thread, "r1", [prompt], tools=[_PICK]))
    start = next(e for e in events if e.type.value == "TOOL_CALL_START")
    finished = events[-1]
    assert finished.type.value == "RUN_FINISHED"
    assert finished.outcome.type == "success", finished.outcome
    assert finished.outcome.pending_tool_call_ids == [start.tool_call_id]
    answer = {"id": "t1", "role": "tool", "toolCallId": start.tool_call_id, "content": "amber"}
    events = _run(plain, _input(thread, "r2", [prompt, answer], tools=[_PICK]))
    assert events[-1].type.value == "RUN_FINISHED" and events[-1].result == "done: amber"
    # the agent's own bash still asks (default: ask): an interrupt, as before
    held = {"id": "u2", "role": "user", "content": 'call bash {"command": "ls /"}'}
    events = _run(plain, _input(thread, "r3", [held], tools=[_PICK]))
    [interrupt] = events[-1].outcome.interrupts
    assert interrupt.reason == "permission"


# -- 8: threads in memory ------------------------------------------------------------


def test_an_agui_thread_in_memory_with_tools_keeps_its_conversation(
    memory: Served, model: ProtocolServer
) -> None:
    pytest.importorskip("ag_ui.core")
    from .test_agui import _input, _run

    thread = f"mem-{uuid.uuid4().hex[:6]}"
    first = {"id": "u1", "role": "user", "content": "remember marmalade"}
    events = _run(memory, _input(thread, "r1", [first], tools=[_PICK]))
    assert events[-1].result == "echo: remember marmalade"
    second = {"id": "u2", "role": "user", "content": "what was it"}
    events = _run(memory, _input(thread, "r2", [first, second], tools=[_PICK]))
    assert events[-1].type.value == "RUN_FINISHED", events[-1]
    texts = [m.get("content") for m in saw(model.requests, "what was it")]
    assert "remember marmalade" in texts and "echo: remember marmalade" in texts
    third = {"id": "u3", "role": "user", "content": "and now"}
    events = _run(memory, _input(thread, "r3", [first, second, third], tools=[_PICK]))
    assert events[-1].type.value == "RUN_FINISHED", events[-1]


# -- 7 (plain side): abort of a paused run, budget kept, images kept ------------------

_PNG = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII="
)


def test_a_paused_run_is_aborted_and_its_session_goes_on(typed: Served) -> None:
    with typed.client() as client:
        started = client.post(
            "/v1/runs", json={"prompt": 'call ask_human {"question": "stop?"}'}
        ).json()
        wait_status(client, started["run_id"], "awaiting_tool")
        aborted = client.post(f"/v1/runs/{started['run_id']}/abort")
        assert aborted.status_code == 200, aborted.text
        status = wait_status(client, started["run_id"], "aborted")
        assert status["reason"] == "aborted over HTTP"
        assert client.post(f"/v1/runs/{started['run_id']}/abort").status_code == 409
        again = client.post(
            "/v1/runs", json={"prompt": "verdict after", "session_id": started["session_id"]}
        )
        assert again.status_code == 201, again.text
        assert wait_status(client, again.json()["run_id"], "done")["output"] == VALUE


def test_a_resume_with_tool_results_keeps_its_budget(typed: Served) -> None:
    with typed.client() as client:
        started = client.post(
            "/v1/runs",
            json={"prompt": 'call ask_human {"question": "go?"}', "budget": {"turns": 1}},
        ).json()
        [call] = wait_status(client, started["run_id"], "awaiting_tool")["pending_tool_calls"]
        answer = {"results": {call["id"]: "yes"}, "budget": {"turns": 3}}
        assert client.post(f"/v1/runs/{started['run_id']}/resume", json=answer).status_code == 200
        done = wait_status(client, started["run_id"], "done", "paused")
        assert done["status"] == "done" and done["output"] == VALUE, done


def test_the_prompts_images_reach_the_model(typed: Served, model: ProtocolServer) -> None:
    with typed.client() as client:
        started = client.post(
            "/v1/runs",
            json={"prompt": "look here", "images": [{"data": _PNG, "mime_type": "image/png"}]},
        ).json()
        wait_status(client, started["run_id"], "done", "error")
    [last] = saw(model.requests, "look here")[-1:]
    urls = [p["image_url"]["url"] for p in last["content"] if p.get("type") == "image_url"]
    assert urls == [f"data:image/png;base64,{_PNG}"]
