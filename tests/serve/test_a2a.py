"""A2A over ``--serve``: the agent card and the a2a-sdk's own client, streaming and not."""

from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest

from harnessc.runtime.permissions.shown_args import fingerprint
from harnessc.testing import ProtocolServer

from .servekit import SPEC, Served, compile_agent

pytest.importorskip("a2a.client")


def _message(text: str, task_id: str = "", context_id: str = "") -> Any:
    from a2a.types import a2a_pb2 as a2a

    return a2a.SendMessageRequest(
        message=a2a.Message(
            message_id=str(uuid.uuid4()),
            role=a2a.Role.ROLE_USER,
            parts=[a2a.Part(text=text)],
            task_id=task_id,
            context_id=context_id,
        )
    )


async def _send(server: Served, text: str, *, streaming: bool, **ids: str) -> list[Any]:
    from a2a.client import ClientConfig, create_client

    async with httpx.AsyncClient(headers=server.headers, timeout=30) as http:
        client = await create_client(
            server.url, client_config=ClientConfig(streaming=streaming, httpx_client=http)
        )
        try:
            return [item async for item in client.send_message(_message(text, **ids))]
        finally:
            await client.close()


def _task(items: list[Any]) -> Any:
    """The task as the last response carrying one."""
    tasks = [i.task for i in items if i.HasField("task")]
    return tasks[-1] if tasks else None


def _final_state(items: list[Any]) -> tuple[Any, str, str]:
    """(state, status message text, task id) after the last response."""
    state, text, task_id = None, "", ""
    for item in items:
        if item.HasField("task"):
            state, task_id = item.task.status.state, item.task.id
            text = "".join(p.text for p in item.task.status.message.parts)
        elif item.HasField("status_update"):
            state, task_id = item.status_update.status.state, item.status_update.task_id
            text = "".join(p.text for p in item.status_update.status.message.parts)
    return state, text, task_id


def test_the_agent_card_is_public_and_names_the_endpoint(server: Served) -> None:
    # the first A2A request imports the sdk: slow on a busy machine
    card = httpx.get(f"{server.url}/.well-known/agent-card.json", timeout=60).json()
    assert card["name"] == "helper"
    assert "echoes" in card["description"]
    # one endpoint, two protocol versions (A2A 1.0, and 0.3 through the sdk's compat layer)
    interfaces = card["supportedInterfaces"]
    assert [i["protocolVersion"] for i in interfaces] == ["1.0", "0.3"]
    for interface in interfaces:
        assert interface["url"] == f"{server.url}/a2a"
        assert interface["protocolBinding"] == "JSONRPC"
    assert card["securitySchemes"]["bearer"]["httpAuthSecurityScheme"]["scheme"] == "Bearer"
    assert httpx.post(f"{server.url}/a2a", json={}).status_code == 401


@pytest.mark.parametrize("streaming", [False, True])
def test_send_message_returns_the_final_text(server: Served, streaming: bool) -> None:
    from a2a.types import a2a_pb2 as a2a

    items = asyncio.run(_send(server, f"hello a2a {streaming}", streaming=streaming))
    state, text, _ = _final_state(items)
    assert state == a2a.TaskState.TASK_STATE_COMPLETED
    assert text == f"echo: hello a2a {streaming}"


def test_a_pause_is_input_required_and_the_next_message_answers_it(server: Served) -> None:
    from a2a.types import a2a_pb2 as a2a

    items = asyncio.run(_send(server, 'call ask_human {"question": "name?"}', streaming=True))
    state, text, task_id = _final_state(items)
    assert state == a2a.TaskState.TASK_STATE_INPUT_REQUIRED
    assert "ask_human" in text and "name?" in text
    context_id = next(
        (i.task.context_id for i in items if i.HasField("task")),
        next(i.status_update.context_id for i in items if i.HasField("status_update")),
    )
    items = asyncio.run(
        _send(server, "Ada", streaming=False, task_id=task_id, context_id=context_id)
    )
    state, text, _ = _final_state(items)
    assert state == a2a.TaskState.TASK_STATE_COMPLETED
    assert text == "done: Ada"


def test_the_agent_card_lists_the_sub_agents(tmp_path: Path, model_server: ProtocolServer) -> None:
    """A spec with ``agents:``: each sub-agent is a skill of the card, read with the
    a2a-sdk's own card resolver."""
    (tmp_path / "spec").mkdir()
    (tmp_path / "spec" / "reviewer.md").write_text(
        "---\nname: reviewer\ndescription: Reviews a change and reports problems.\n"
        "tools: Read, Grep\n---\n\nYou review changes.\n"
    )
    spec = SPEC + "agents:\n  reviewer:\n    from: reviewer.md\n"
    kit = compile_agent(tmp_path, model_server.url, spec)
    served = kit.serve(token=None)
    try:
        card = asyncio.run(_card(served))
    finally:
        served.stop()
    skills = {skill.id: (skill.name, skill.description, list(skill.tags)) for skill in card.skills}
    assert skills["reviewer"] == (
        "reviewer",
        "Reviews a change and reports problems.",
        ["sub-agent"],
    )
    assert skills["helper"][2] == ["agent"]


async def _card(server: Served) -> Any:
    from a2a.client import A2ACardResolver

    async with httpx.AsyncClient(timeout=60) as http:
        return await A2ACardResolver(http, server.url).get_agent_card()


# -- the card's URL with a slash, caching, and A2A 0.3 clients beside 1.0 ---------------


def test_the_endpoint_answers_at_the_card_s_url_with_a_slash(server: Served) -> None:
    """A JSON-RPC client posting to ``/a2a/`` gets its answer, not a 307 with no body."""
    from a2a.client import ClientConfig, ClientFactory
    from a2a.types import a2a_pb2 as a2a

    request = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "SendMessage",
        "params": {
            "message": {
                "messageId": str(uuid.uuid4()),
                "role": "ROLE_USER",
                "parts": [{"text": "hello slash"}],
            }
        },
    }
    answer = httpx.post(
        f"{server.url}/a2a/",
        json=request,
        headers={**server.headers, "A2A-Version": "1.0"},
        timeout=60,
    )
    assert answer.status_code == 200, answer.text
    assert answer.json()["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"

    async def send() -> list[Any]:
        async with httpx.AsyncClient(headers=server.headers, timeout=30) as http:
            card = await _card_of(server, http)
            for interface in card.supported_interfaces:
                interface.url += "/"
            client = ClientFactory(ClientConfig(streaming=False, httpx_client=http)).create(card)
            try:
                return [item async for item in client.send_message(_message("slash client"))]
            finally:
                await client.close()

    state, text, _ = _final_state(asyncio.run(send()))
    assert state == a2a.TaskState.TASK_STATE_COMPLETED and text == "echo: slash client"


def test_the_agent_card_is_cacheable(server: Served) -> None:
    card = httpx.get(f"{server.url}/.well-known/agent-card.json", timeout=60)
    assert card.status_code == 200
    control = card.headers["cache-control"]
    assert "max-age=" in control and "public" in control
    again = httpx.get(
        f"{server.url}/.well-known/agent-card.json",
        headers={"If-None-Match": card.headers["etag"]},
        timeout=60,
    )
    assert again.status_code == 304 and again.headers["cache-control"] == control


async def _card_of(server: Served, http: httpx.AsyncClient) -> Any:
    from a2a.client import A2ACardResolver

    return await A2ACardResolver(http, server.url).get_agent_card()


async def _send_legacy(
    server: Served, text: str, *, streaming: bool, **ids: str
) -> tuple[list[Any], list[str]]:
    """The a2a-sdk's client configured for A2A 0.3 (the card's 0.3 interface only: the
    sdk then talks 0.3's JSON-RPC, ``message/send`` and ``message/stream``); the
    responses and the JSON-RPC methods it sent."""
    from a2a.client import ClientConfig, ClientFactory

    methods: list[str] = []

    async def record(request: httpx.Request) -> None:
        if request.method == "POST":
            methods.append(json.loads(request.content)["method"])

    async with httpx.AsyncClient(
        headers=server.headers, timeout=30, event_hooks={"request": [record]}
    ) as http:
        card = await _card_of(server, http)
        legacy = [i for i in card.supported_interfaces if i.protocol_version == "0.3"]
        assert legacy, card.supported_interfaces
        del card.supported_interfaces[:]
        card.supported_interfaces.extend(legacy)
        client = ClientFactory(ClientConfig(streaming=streaming, httpx_client=http)).create(card)
        try:
            items = [item async for item in client.send_message(_message(text, **ids))]
        finally:
            await client.close()
    return items, methods


@pytest.mark.parametrize("streaming", [False, True])
def test_an_a2a_0_3_client_is_served_beside_1_0(server: Served, streaming: bool) -> None:
    from a2a.types import a2a_pb2 as a2a

    items, methods = asyncio.run(
        _send_legacy(server, f"old client {streaming}", streaming=streaming)
    )
    assert methods == ["message/stream" if streaming else "message/send"]
    state, text, _ = _final_state(items)
    assert state == a2a.TaskState.TASK_STATE_COMPLETED
    assert text == f"echo: old client {streaming}"
    # a pause answered over 0.3 as over 1.0
    items, _ = asyncio.run(
        _send_legacy(server, 'call ask_human {"question": "name?"}', streaming=streaming)
    )
    state, text, task_id = _final_state(items)
    assert state == a2a.TaskState.TASK_STATE_INPUT_REQUIRED and "name?" in text
    [context_id] = {i.task.context_id for i in items if i.HasField("task")} | {
        i.status_update.context_id for i in items if i.HasField("status_update")
    }
    items, _ = asyncio.run(
        _send_legacy(server, "Ada", streaming=streaming, task_id=task_id, context_id=context_id)
    )
    state, text, _ = _final_state(items)
    assert state == a2a.TaskState.TASK_STATE_COMPLETED and text == "done: Ada"


def test_the_0_3_wire_format(server: Served) -> None:
    """What an A2A 0.3 SDK reads and sends: the card's 0.3 fields, and ``message/send``
    with ``kind``-tagged parts answered with a 0.3 task."""
    card = httpx.get(f"{server.url}/.well-known/agent-card.json", timeout=60).json()
    assert card["url"] == f"{server.url}/a2a" and card["preferredTransport"] == "JSONRPC"
    assert card["protocolVersion"].startswith("0.3")
    versions = sorted(i["protocolVersion"] for i in card["supportedInterfaces"])
    assert versions == ["0.3", "1.0"]
    request = {
        "jsonrpc": "2.0",
        "id": "legacy-1",
        "method": "message/send",
        "params": {
            "message": {
                "kind": "message",
                "messageId": str(uuid.uuid4()),
                "role": "user",
                "parts": [{"kind": "text", "text": "raw 0.3"}],
            }
        },
    }
    answer = httpx.post(f"{server.url}/a2a", json=request, headers=server.headers, timeout=60)
    assert answer.status_code == 200
    result = answer.json()["result"]
    assert result["kind"] == "task" and result["status"]["state"] == "completed"
    assert result["artifacts"][0]["parts"][0] == {"kind": "text", "text": "echo: raw 0.3"}


def test_an_approval_carries_the_shown_calls_fingerprint(server: Served) -> None:
    from a2a.types import a2a_pb2 as a2a
    from google.protobuf.json_format import MessageToDict, ParseDict
    from google.protobuf.struct_pb2 import Value

    items = asyncio.run(_send(server, 'call bash {"command": "echo via-a2a"}', streaming=False))
    state, _, task_id = _final_state(items)
    assert state == a2a.TaskState.TASK_STATE_INPUT_REQUIRED
    task = _task(items)
    meta = MessageToDict(task.status.message.metadata)["harnessc"]
    [call] = meta["pause"]["calls"]
    assert call["fingerprint"] == fingerprint("bash", {"command": "echo via-a2a"})

    def answer(shown: str) -> list[Any]:
        approvals = {call["id"]: {"decision": "allow", "fingerprint": shown}}
        request = _message("", task_id=task_id, context_id=task.context_id)
        del request.message.parts[:]
        request.message.parts.append(a2a.Part(data=ParseDict({"approvals": approvals}, Value())))
        return asyncio.run(_send_request(server, request))

    state, text, _ = _final_state(answer(fingerprint("bash", {"command": "touch pwned"})))
    assert state == a2a.TaskState.TASK_STATE_INPUT_REQUIRED  # refused: asked again
    assert "not the one that was shown" in text
    state, text, _ = _final_state(answer(call["fingerprint"]))
    assert state == a2a.TaskState.TASK_STATE_COMPLETED and "via-a2a" in text


async def _send_request(server: Served, request: Any) -> list[Any]:
    from a2a.client import ClientConfig, create_client

    async with httpx.AsyncClient(headers=server.headers, timeout=30) as http:
        client = await create_client(
            server.url, client_config=ClientConfig(streaming=False, httpx_client=http)
        )
        try:
            return [item async for item in client.send_message(request)]
        finally:
            await client.close()
