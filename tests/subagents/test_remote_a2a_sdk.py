"""A remote A2A agent that is not harnessc (issue 44): the a2a-sdk's own server
(``DefaultRequestHandler`` and its JSON-RPC routes under uvicorn, on loopback) runs a
small executor of the sdk's kind. A lead harness hands a task to it: the remote's
artifact is the hand-over's result; its ``input-required`` pauses the lead with the
``a2a_input`` call, and the lead's answer goes back on the same task, which completes.
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("a2a.server")
pytest.importorskip("uvicorn")

ASK = "ask me first"


def _executor() -> Any:
    from a2a.helpers import new_task_from_user_message, new_text_part
    from a2a.server.agent_execution import AgentExecutor
    from a2a.server.tasks import TaskUpdater

    class Shouter(AgentExecutor):  # type: ignore[misc]
        """Answers a message in capitals; a message holding ASK asks which colour first."""

        def __init__(self) -> None:
            self.tasks: list[str] = []

        async def execute(self, context: Any, event_queue: Any) -> None:
            task = context.current_task
            if task is None:
                task = new_task_from_user_message(context.message)
                await event_queue.enqueue_event(task)
                self.tasks.append(task.id)
            updater = TaskUpdater(event_queue, task.id, task.context_id)
            text = context.get_user_input()
            await updater.start_work()
            if ASK in text:
                question = updater.new_agent_message([new_text_part("which colour?")])
                await updater.requires_input(question)
                return
            parts = [new_text_part(text.upper())]
            await updater.add_artifact(parts, name="shout")
            await updater.complete(updater.new_agent_message(parts))

        async def cancel(self, context: Any, event_queue: Any) -> None:
            updater = TaskUpdater(event_queue, context.task_id, context.context_id)
            await updater.cancel()

    return Shouter()


class SdkServer:
    """The a2a-sdk's server for ``executor`` under uvicorn in a thread."""

    def __init__(self, executor: Any) -> None:
        import uvicorn
        from a2a.server.request_handlers import DefaultRequestHandler
        from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
        from a2a.server.tasks import InMemoryTaskStore
        from a2a.types import a2a_pb2 as a2a
        from starlette.applications import Starlette

        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self.port = int(sock.getsockname()[1])
        self.url = f"http://127.0.0.1:{self.port}"
        card = a2a.AgentCard(
            name="shouter",
            description="Answers in capitals.",
            version="1",
            supported_interfaces=[
                a2a.AgentInterface(
                    url=f"{self.url}/a2a", protocol_binding="JSONRPC", protocol_version="1.0"
                )
            ],
            capabilities=a2a.AgentCapabilities(streaming=True),
            default_input_modes=["text/plain"],
            default_output_modes=["text/plain"],
            skills=[a2a.AgentSkill(id="shout", name="shout", description="Shouts.", tags=["x"])],
        )
        handler = DefaultRequestHandler(
            agent_executor=executor, task_store=InMemoryTaskStore(), agent_card=card
        )
        app = Starlette(
            routes=[*create_agent_card_routes(card), *create_jsonrpc_routes(handler, "/a2a")]
        )
        config = uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> SdkServer:
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            assert time.monotonic() < deadline, "the a2a-sdk server did not start"
            time.sleep(0.05)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=30)


@pytest.fixture(scope="module")
def shouter() -> Iterator[tuple[SdkServer, Any]]:
    executor = _executor()
    with SdkServer(executor) as server:
        yield server, executor


def _lead(url: str, prompt: str, answer: str = "") -> Any:
    from harnessc.runtime import AgentHarness, AgentHarnessOptions, Model, Session
    from harnessc.runtime.agent.remote_a2a import RemoteA2A
    from harnessc.runtime.agent.subagents import SubAgent, SubAgents
    from harnessc.runtime.providers.scripted import (
        ScriptedProvider,
        reply_text,
        reply_tool_calls,
    )

    args = {"subagent_type": "shouter", "description": "shout", "prompt": prompt}
    replies = [reply_tool_calls([("task", args)]), reply_text("lead done")]
    shouter = SubAgent("shouter", "Answers in capitals.", remote=RemoteA2A(url))
    return AgentHarness(
        AgentHarnessOptions(
            session=Session(),
            models={"m": Model(id="lead", api="scripted")},
            provider=ScriptedProvider(replies, chunk_size=64),
            extensions=[SubAgents([shouter], agent="lead")],
        )
    )


def _task_result(result: Any) -> Any:
    [message] = [m for m in result.messages if getattr(m, "role", "") == "toolResult"]
    return message


def test_the_remote_artifact_is_the_hand_overs_result(shouter: tuple[SdkServer, Any]) -> None:
    server, _ = shouter

    async def main() -> Any:
        harness = _lead(server.url, "hello there")
        try:
            return await harness.prompt("go")
        finally:
            await harness.close()

    result = asyncio.run(main())
    assert result.status == "done", result
    message = _task_result(result)
    assert not message.is_error and message.content[0].text == "HELLO THERE", message
    assert message.details["state"] == "TASK_STATE_COMPLETED", message.details


def test_input_required_pauses_the_lead_and_the_answer_goes_on_the_same_task(
    shouter: tuple[SdkServer, Any],
) -> None:
    server, executor = shouter
    asked_before = len(executor.tasks)

    async def main() -> tuple[Any, Any]:
        harness = _lead(server.url, ASK)
        try:
            paused = await harness.prompt("go")
            assert paused.status == "paused" and "which colour?" in paused.reason, paused
            assert harness.paused_reason == "awaiting_tool"  # the remote's question
            run = harness.run_state
            assert run is not None
            [(call, kind, path)] = [n for r in run.calls for n in r.nested_calls()]
            assert (call.name, kind, path) == ("a2a_input", "tool", "lead > shouter")
            assert call.arguments["question"] == "which colour?"
            done = await harness.resume({call.id: "red, please"})
            return paused, done
        finally:
            await harness.close()

    paused, done = asyncio.run(main())
    assert done.status == "done", done
    [message] = [
        m for m in done.messages if getattr(m, "role", "") == "toolResult" and m.tool_name == "task"
    ]
    assert message.content[0].text == "RED, PLEASE", message
    assert len(executor.tasks) == asked_before + 1, "the answer went on the task it asked in"
