"""A fork server for the SIGKILL test (not a test module).

It imports the runtime once, then for every ``run <dir> <seed>`` line on stdin forks a
child that runs a scripted multi-turn agent with tools in ``<dir>``. Lines on stdout:

    child <pid>                      the child started (from the fork server)
    turn <n> <entry id> ...          the child finished turn n; these entries are in its session
    path <session file>              the child's session file (right after creating it)
    finished                         the child's whole script ran
    reaped <pid> <status>            the child is gone (from the fork server)

A parent kills ``<pid>`` with SIGKILL at a moment of its choosing.
"""

from __future__ import annotations

import asyncio
import os
import sys
from typing import Any

from harnessc.runtime import AgentHarness, AgentHarnessOptions, Model
from harnessc.runtime.providers.scripted import ScriptedProvider, reply_text, reply_tool_calls
from harnessc.runtime.session import JsonlSessionRepo
from harnessc.runtime.tools import create_write_tool
from harnessc.runtime.tools.base import Tool, ToolResult, text_result

ADD_SCHEMA = {
    "type": "object",
    "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
    "required": ["a", "b"],
}


async def _add(
    call_id: str, params: dict[str, Any], signal: Any, update: Any, ctx: Any
) -> ToolResult:
    await asyncio.sleep(0.001)
    return text_result(str(params["a"] + params["b"]))


def script(prompt: int) -> list[Any]:
    """Three turns per prompt: two tool batches, then a text answer."""
    return [
        reply_tool_calls(
            [
                ("add", {"a": prompt, "b": 1}),
                ("write", {"path": f"f{prompt}.txt", "content": "x" * 200}),
            ],
            text=f"working on prompt {prompt}",
        ),
        reply_tool_calls([("add", {"a": prompt, "b": 2})]),
        reply_text(f"answer {prompt} " + "y" * 300),
    ]


PROMPTS = 3


def emit(text: str) -> None:
    os.write(1, (text + "\n").encode())


async def child_main(directory: str) -> None:
    repo = JsonlSessionRepo(os.path.join(directory, "sessions"))
    workspace = os.path.join(directory, "work")
    os.makedirs(workspace, exist_ok=True)
    session = repo.create(cwd=workspace, metadata={"agent": "crash"})
    emit(f"path {session.path}")
    replies: list[Any] = []
    for prompt in range(1, PROMPTS + 1):
        replies.extend(script(prompt))
    harness = AgentHarness(
        AgentHarnessOptions(
            session=session,
            models={"main": Model(id="scripted", api="scripted", provider="test")},
            tools=[Tool("add", "Add.", ADD_SCHEMA, _add), create_write_tool()],
            provider=ScriptedProvider(replies, chunk_size=16),
            tool_context=_ctx(workspace),
        )
    )
    turns = 0

    def on_event(event: Any) -> None:
        nonlocal turns
        if event.type == "turn_end":
            turns += 1
            ids = " ".join(e.id for e in session.entries())
            emit(f"turn {turns} {ids}")

    harness.subscribe(on_event)
    for prompt in range(1, PROMPTS + 1):
        result = await harness.prompt(f"prompt {prompt}")
        assert result.status == "done", result.reason
    session.close()
    emit("finished")


def _ctx(workspace: str) -> Any:
    from harnessc.runtime import ToolContextSource

    return ToolContextSource({"workspace": workspace})


def main() -> None:
    for line in sys.stdin:
        parts = line.split()
        if not parts:
            continue
        if parts[0] == "quit":
            return
        directory = parts[1]
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                asyncio.run(child_main(directory))
            except BaseException as exc:  # report, never fall back into the server loop
                emit(f"crashed {type(exc).__name__}: {exc}")
                code = 1
            os._exit(code)
        emit(f"child {pid}")
        _, status = os.waitpid(pid, 0)
        emit(f"reaped {pid} {status}")


if __name__ == "__main__":
    main()
