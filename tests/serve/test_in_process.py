"""The served doors in process (the server's ASGI application through httpx), for what
only the inside shows: no handler opens or creates a session file on the event loop
(issue 40 item 9), and harnesses kept for sessions in memory are bounded by
``kept_runs`` (item 8)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from harnessc.runtime import AgentHarnessOptions, ExternalTool, Model
from harnessc.runtime.core.messages import AssistantMessage, TextContent, ToolCall
from harnessc.runtime.providers.base import Context
from harnessc.runtime.providers.scripted import ScriptedProvider
from harnessc.runtime.session import JsonlSessionRepo

pytest.importorskip("starlette")
httpx = pytest.importorskip("httpx")

MODELS = {"main": Model(id="scripted-1", api="scripted", provider="test", context_window=10_000)}


def _reply(context: Context) -> AssistantMessage:
    last = context.messages[-1]
    text = last.text if hasattr(last, "text") else ""
    if isinstance(getattr(last, "content", None), str):
        text = last.content  # type: ignore[union-attr]
    if str(text).startswith("ask"):
        return AssistantMessage(
            content=[ToolCall("call_a", "ask_user", {"q": "?"})], stop_reason="toolUse"
        )
    return AssistantMessage(content=[TextContent(f"echo: {text}")])


def _options(*, session: Any = None, cwd: str | None = None) -> AgentHarnessOptions:
    return AgentHarnessOptions(
        session=session,
        models=MODELS,
        provider=ScriptedProvider(_reply),
        tools=[ExternalTool("ask_user", "Ask the user.", {"type": "object", "properties": {}})],
        system_prompt="You are in process.",
    )


class WatchedRepo(JsonlSessionRepo):
    """The JSONL store, noting each open or create made on an event loop's thread."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.on_loop: list[str] = []

    def _note(self, what: str) -> None:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return  # a worker thread: fine
        self.on_loop.append(what)

    def open(self, *args: Any, **kwargs: Any) -> Any:
        self._note("open")
        return super().open(*args, **kwargs)

    def create(self, *args: Any, **kwargs: Any) -> Any:
        self._note("create")
        return super().create(*args, **kwargs)


def _app(store: Any, kept_runs: int = 1000) -> tuple[Any, Any]:
    from harnessc.runtime.runs.agent import AgentSource
    from harnessc.runtime.runs.plain import PlainRuns
    from harnessc.runtime.serve.app import build_app
    from harnessc.runtime.serve.config import ServeConfig
    from harnessc.runtime.serve.state import ServeState

    source = AgentSource(_options, agent_name="inproc", cwd=".", store=store)
    runs = PlainRuns(source, kept_runs=kept_runs)
    return build_app(ServeState(config=ServeConfig(), runs=runs)), runs


async def _settle(client: Any, run_id: str) -> dict[str, Any]:
    while True:
        status = (await client.get(f"/v1/runs/{run_id}")).json()
        if status["status"] not in ("running", "queued"):
            return status
        await asyncio.sleep(0.01)


def test_no_handler_opens_a_session_file_on_the_event_loop(tmp_path: Path) -> None:
    repo = WatchedRepo(tmp_path / "sessions")

    async def scenario() -> None:
        app, runs = _app(repo)
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://in") as client:
            first = (await client.post("/v1/runs", json={"prompt": "hello"})).json()
            await _settle(client, first["run_id"])
            session_id = first["session_id"]
            shown = await client.get(f"/v1/sessions/{session_id}")
            assert shown.status_code == 200 and len(shown.json()["messages"]) == 2
            again = await client.post("/v1/runs", json={"prompt": "more", "session_id": session_id})
            await _settle(client, again.json()["run_id"])
            chat = await client.post(
                "/v1/chat/completions",
                json={
                    "model": "inproc",
                    "user": session_id,
                    "messages": [{"role": "user", "content": "chat"}],
                },
            )
            assert chat.status_code == 200 and chat.headers["x-session-id"] == session_id
            paused = (await client.post("/v1/runs", json={"prompt": "ask me"})).json()
            assert (await _settle(client, paused["run_id"]))["status"] == "awaiting_tool"
        await runs.drain(0)
        # a restarted server finds the paused run again through its session
        app, runs = _app(repo)
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://in") as client:
            found = (await client.get(f"/v1/runs/{paused['run_id']}")).json()
            assert found["status"] == "awaiting_tool"
        await runs.drain(0)

    asyncio.run(scenario())
    assert repo.on_loop == [], f"opened on the event loop: {repo.on_loop}"


def test_sessions_in_memory_are_bounded_by_kept_runs() -> None:
    async def scenario() -> None:
        app, runs = _app(None, kept_runs=3)
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://in") as client:
            ids = []
            for n in range(6):
                started = (await client.post("/v1/runs", json={"prompt": f"p{n}"})).json()
                assert (await _settle(client, started["run_id"]))["status"] == "done"
                ids.append(started)
            kept = [r for r in runs.runs.values() if r.harness is not None]
            assert len(runs.runs) <= 3 and len(kept) <= 3, (len(runs.runs), len(kept))
            # the newest session goes on; the oldest was forgotten with its run
            newest = ids[-1]["session_id"]
            again = await client.post("/v1/runs", json={"prompt": "on", "session_id": newest})
            assert again.status_code == 201, again.text
            await _settle(client, again.json()["run_id"])
            gone = await client.post(
                "/v1/runs", json={"prompt": "on", "session_id": ids[0]["session_id"]}
            )
            assert gone.status_code == 404, gone.text
        await runs.drain(0)

    asyncio.run(scenario())


def test_a_run_on_sessions_in_memory_starts_without_a_worker_thread(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With sessions in memory there is no file to create or look for: a run's start
    through the native door and AG-UI hands nothing to a worker thread (each hand-off
    costs the loop a wake-up)."""
    pytest.importorskip("ag_ui")
    handed: list[str] = []
    to_thread = asyncio.to_thread

    async def watched(func: Any, /, *args: Any, **kwargs: Any) -> Any:
        handed.append(getattr(func, "__qualname__", repr(func)))
        return await to_thread(func, *args, **kwargs)

    monkeypatch.setattr(asyncio, "to_thread", watched)

    async def scenario() -> None:
        app, runs = _app(None)
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://in") as client:
            started = (await client.post("/v1/runs", json={"prompt": "hello"})).json()
            assert (await _settle(client, started["run_id"]))["status"] == "done"
            body = {
                "threadId": "t-1",
                "runId": "r-1",
                "state": {},
                "messages": [{"id": "u1", "role": "user", "content": "hi"}],
                "tools": [],
                "context": [],
                "forwardedProps": {},
            }
            answer = await client.post("/agui", json=body)
            assert answer.status_code == 200 and "echo: hi" in answer.text
            assert "RUN_FINISHED" in answer.text
        await runs.drain(0)

    asyncio.run(scenario())
    assert handed == [], f"handed to a worker thread: {handed}"
