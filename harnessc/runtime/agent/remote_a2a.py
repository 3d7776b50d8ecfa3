"""A remote A2A agent as a sub-agent: the hand-over sends the task with the a2a-sdk's
client and streams its updates as the sub-agent's events.

``agents: {name: {a2a: URL, headers: {...}}}`` in a spec: ``URL`` is the agent's base
URL or its card's (``.../.well-known/agent-card.json``); ``headers`` go with every
request (``Authorization: Bearer ${TOKEN}``: read from the environment, never written).

- ``completed``: the hand-over's result is the artifacts' text, or a data part's value
  (a typed remote agent's) as JSON text, with ``details.output`` holding it;
- ``input-required`` (or ``auth-required``): the parent run pauses, as it does for a
  local sub-agent. A remote harnessc agent paused on a permission ask names its held
  calls (the message's ``harnessc.pause``): they are held in the parent's pause and an
  approval answers them. Any other question is one call, ``a2a_input``, waiting for a
  result: its text is the reply sent to the task (a JSON object with ``results``,
  ``approvals`` or ``budget`` is sent as a data part, the answer a harnessc agent takes);
- ``failed``, ``rejected``, ``canceled``: an error result naming the state and message;
- what the remote reports it used (``harnessc.usage`` in its messages' metadata) is
  added to the parent's budget usage, so one budget covers the tree;
- the parent's abort cancels the remote task (``tasks/cancel``), working or paused on it.

The task's id and context, and the usage counted so far, are recorded on the hand-over
call (``nested.remote``), so a run resumed in another process goes on with the same task.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from harnessc.runtime.core.budget import BudgetUsage
from harnessc.runtime.core.events import Event, NoticeEvent
from harnessc.runtime.core.messages import TextContent
from harnessc.runtime.core.signal import AbortSignal
from harnessc.runtime.tools.base import HoldCall, ToolResult

__all__ = [
    "CARD_PATH",
    "INPUT_TOOL",
    "RemoteA2A",
    "RemoteHandOver",
    "cancel_task",
    "card_address",
]

CARD_PATH = "/.well-known/agent-card.json"
INPUT_TOOL = "a2a_input"  # the call a remote agent's question waits on
_ANSWER_KEYS = frozenset({"results", "approvals", "budget"})
_USAGE = ("turns", "tool_calls", "input_tokens", "output_tokens", "cost_usd")


@dataclass(slots=True, frozen=True)
class RemoteA2A:
    """A remote A2A agent: its base URL (or its card's) and the headers of every request."""

    url: str
    headers: dict[str, str] = field(default_factory=dict, repr=False)
    timeout_s: float = 600.0


def card_address(url: str) -> tuple[str, str | None]:
    """(the agent's base URL, the card's path relative to it, None: the default)."""
    base = url.rstrip("/")
    if base.endswith(CARD_PATH):
        return base[: -len(CARD_PATH)], None
    if base.endswith(".json"):
        head, _, tail = base.rpartition("/")
        return head, tail
    return base, None


Emit = Callable[[Event], Awaitable[Any]]


async def cancel_task(remote: RemoteA2A, task_id: str) -> None:
    """Cancel a task the remote agent keeps (a paused hand-over's, when the run that
    waited on it is aborted): best effort, bounded; a task that ended is left as it is."""
    import httpx
    from a2a.client import ClientConfig, create_client
    from a2a.types import a2a_pb2 as a2a

    if not task_id:
        return
    base, card_path = card_address(remote.url)
    with contextlib.suppress(Exception):
        async with asyncio.timeout(15):
            async with httpx.AsyncClient(headers=dict(remote.headers), timeout=10) as http:
                client = await create_client(
                    base,
                    client_config=ClientConfig(streaming=False, httpx_client=http),
                    relative_card_path=card_path,
                )
                try:
                    await client.cancel_task(a2a.CancelTaskRequest(id=task_id))
                finally:
                    await client.close()


class RemoteHandOver:
    """One hand-over to a remote agent (a task, answered across pauses)."""

    def __init__(
        self,
        remote: RemoteA2A,
        *,
        name: str,
        path: tuple[str, ...],
        call_id: str,
        emit: Emit,
        usage: BudgetUsage,
    ) -> None:
        self.remote = remote
        self.name = name
        self.path = path
        self.call_id = call_id
        self.emit = emit
        self.usage = usage  # the parent's: what the remote reports is added to it
        self.task_id = ""
        self.context_id = ""
        self.counted: dict[str, float] = {}  # the remote run's usage counted so far

    async def run(
        self,
        prompt: str,
        signal: AbortSignal,
        nested: dict[str, Any] | None,
        answers: dict[str, Any] | None,
    ) -> ToolResult:
        """Send the task (or the answer to its question, ``nested`` naming the task
        paused before); the result, or HoldCall when the remote waits for input."""
        import httpx
        from a2a.client import ClientConfig, create_client

        message = self._first(prompt) if not nested else self._reply(nested, answers or {})
        base, card_path = card_address(self.remote.url)
        timeout = httpx.Timeout(self.remote.timeout_s, connect=30.0)
        async with httpx.AsyncClient(headers=dict(self.remote.headers), timeout=timeout) as http:
            try:
                client = await create_client(
                    base,
                    client_config=ClientConfig(streaming=True, httpx_client=http),
                    relative_card_path=card_path,
                )
            except Exception as exc:
                return _error(f"Remote agent {self.name}: cannot read its card: {_say(exc)}")
            try:
                return await self._send(client, message, signal)
            finally:
                with contextlib.suppress(Exception):
                    await client.close()

    # -- messages -------------------------------------------------------------------------

    def _first(self, prompt: str) -> Any:
        from a2a.types import a2a_pb2 as a2a

        return a2a.Message(
            message_id=str(uuid.uuid4()), role=a2a.Role.ROLE_USER, parts=[a2a.Part(text=prompt)]
        )

    def _reply(self, nested: dict[str, Any], answers: dict[str, Any]) -> Any:
        """The answer to the remote's question: approvals of its held calls as a data
        part, else the result given to ``a2a_input`` (a data part when it is an answer
        object)."""
        from a2a.types import a2a_pb2 as a2a
        from google.protobuf import struct_pb2

        remote = nested.get("remote") or {}
        self.task_id = str(remote.get("task_id", ""))
        self.context_id = str(remote.get("context_id", ""))
        self.counted = {k: float(v) for k, v in (remote.get("counted") or {}).items()}
        approvals = answers.get("approvals") or {}
        results = answers.get("results") or {}
        part: Any
        if approvals:
            data = {"approvals": {k: "allow" if v else "deny" for k, v in approvals.items()}}
            part = a2a.Part(data=_value(struct_pb2, data))
        else:
            given = next(iter(results.values()), "") if results else ""
            if isinstance(given, dict):
                given = str(given.get("error") or json.dumps(given, ensure_ascii=False))
            parsed = _answer_object(str(given))
            if parsed is not None:
                part = a2a.Part(data=_value(struct_pb2, parsed))
            else:
                part = a2a.Part(text=str(given))
        return a2a.Message(
            message_id=str(uuid.uuid4()),
            role=a2a.Role.ROLE_USER,
            parts=[part],
            task_id=self.task_id,
            context_id=self.context_id,
        )

    # -- the task ---------------------------------------------------------------------------

    async def _send(self, client: Any, message: Any, signal: AbortSignal) -> ToolResult:
        from a2a.types import a2a_pb2 as a2a

        state: Any = None
        status_message: Any = None
        artifacts: dict[str, Any] = {}

        async def follow() -> None:
            nonlocal state, status_message
            request = a2a.SendMessageRequest(message=message)
            async for item in client.send_message(request):
                if item.HasField("task"):
                    task = item.task
                    self.task_id, self.context_id = task.id, task.context_id
                    state, status_message = task.status.state, task.status.message
                    for artifact in task.artifacts:
                        artifacts[artifact.artifact_id] = artifact
                elif item.HasField("status_update"):
                    update = item.status_update
                    self.task_id = update.task_id or self.task_id
                    self.context_id = update.context_id or self.context_id
                    state, status_message = update.status.state, update.status.message
                    await self._notice(f"status: {a2a.TaskState.Name(state)}")
                elif item.HasField("artifact_update"):
                    artifact = item.artifact_update.artifact
                    artifacts[artifact.artifact_id] = artifact
                    await self._notice(f"artifact {artifact.name or artifact.artifact_id}")
                elif item.HasField("message"):
                    status_message = item.message
                    state = a2a.TaskState.TASK_STATE_COMPLETED
                self._count(status_message)

        work = asyncio.ensure_future(follow())

        def stop_work() -> None:
            work.cancel()

        stop = signal.add_listener(stop_work)
        try:
            await work
        except asyncio.CancelledError:
            if signal.aborted:
                await self._cancel(client)
            raise
        except Exception as exc:
            return _error(f"Remote agent {self.name} failed: {_say(exc)}")
        finally:
            stop()
        return self._outcome(state, status_message, list(artifacts.values()))

    async def _cancel(self, client: Any) -> None:
        """The parent's abort: cancel the remote task (best effort, bounded)."""
        from a2a.types import a2a_pb2 as a2a

        if not self.task_id:
            return
        with contextlib.suppress(Exception):
            async with asyncio.timeout(10):
                await asyncio.shield(client.cancel_task(a2a.CancelTaskRequest(id=self.task_id)))

    def _outcome(self, state: Any, message: Any, artifacts: list[Any]) -> ToolResult:
        from a2a.types import a2a_pb2 as a2a

        said = _text(message.parts) if message is not None else ""
        details: dict[str, Any] = {
            "agent": self.name,
            "agent_path": list(self.path),
            "remote": self.remote.url,
            "task_id": self.task_id,
            "context_id": self.context_id,
            "state": a2a.TaskState.Name(state) if state is not None else "none",
            "usage": dict(self.counted),
        }
        if state in (
            a2a.TaskState.TASK_STATE_INPUT_REQUIRED,
            a2a.TaskState.TASK_STATE_AUTH_REQUIRED,
        ):
            raise HoldCall(f"the remote agent {self.name} asks: {said}", self._held(message))
        if state != a2a.TaskState.TASK_STATE_COMPLETED:
            shown = details["state"].removeprefix("TASK_STATE_").lower()
            return ToolResult(
                [TextContent(f"Remote agent {self.name} ended {shown}: {said}")],
                details=details,
                is_error=True,
            )
        parts = [p for a in artifacts for p in a.parts] or (
            list(message.parts) if message is not None else []
        )
        value = _data(parts)
        if value is not None:
            details["output"] = value
            text = json.dumps(value, ensure_ascii=False)
        else:
            text = _text(parts) or said
        return ToolResult([TextContent(text)], details=details)

    def _held(self, message: Any) -> dict[str, Any]:
        """What the parent's pause holds: the remote's held calls (an approval answers
        them), else one ``a2a_input`` call waiting for the reply."""
        said = _text(message.parts) if message is not None else ""
        pause = _metadata(message).get("pause") or {}
        where = " > ".join(self.path)
        pending: list[dict[str, Any]] = []
        if pause.get("kind") == "approval":
            for call in pause.get("calls") or []:
                if isinstance(call, dict) and call.get("held"):
                    pending.append(
                        {
                            "call": {
                                "type": "toolCall",
                                "id": str(call.get("id", "")),
                                "name": str(call.get("name", "")),
                                "arguments": call.get("arguments") or {},
                            },
                            "kind": "approval",
                            "path": where,
                        }
                    )
        if not pending:
            pending.append(
                {
                    "call": {
                        "type": "toolCall",
                        "id": f"{self.call_id}.input",
                        "name": INPUT_TOOL,
                        "arguments": {"agent": self.name, "question": said},
                    },
                    "kind": "tool",
                    "path": where,
                }
            )
        return {
            "agent": self.name,
            "path": list(self.path),
            "status": "paused",
            "pending": pending,
            "remote": {
                "url": self.remote.url,
                "task_id": self.task_id,
                "context_id": self.context_id,
                "counted": dict(self.counted),
            },
        }

    def _count(self, message: Any) -> None:
        """Add what the remote run used since it was last counted to the parent's usage."""
        usage = _metadata(message).get("usage")
        if not isinstance(usage, dict):
            return
        delta: dict[str, float] = {}
        for key in _USAGE:
            value = usage.get(key)
            if isinstance(value, int | float) and not isinstance(value, bool):
                delta[key] = max(0.0, float(value) - self.counted.get(key, 0.0))
                self.counted[key] = max(float(value), self.counted.get(key, 0.0))
        self.usage.turns += int(delta.get("turns", 0))
        self.usage.tool_calls += int(delta.get("tool_calls", 0))
        self.usage.tokens += int(delta.get("input_tokens", 0) + delta.get("output_tokens", 0))
        self.usage.cost_usd += delta.get("cost_usd", 0.0)

    async def _notice(self, text: str) -> None:
        from harnessc.runtime.core.events import SubagentEvent

        event = NoticeEvent(source=f"a2a:{self.name}", message=text)
        await self.emit(
            SubagentEvent(agent_path=list(self.path), tool_call_id=self.call_id, event=event)
        )


def _metadata(message: Any) -> dict[str, Any]:
    """The ``harnessc`` object of a message's metadata ({} when there is none)."""
    if message is None or not message.HasField("metadata"):
        return {}
    from google.protobuf.json_format import MessageToDict

    value = MessageToDict(message.metadata).get("harnessc")
    return value if isinstance(value, dict) else {}


def _text(parts: Any) -> str:
    return "\n".join(p.text for p in parts if p.HasField("text"))


def _data(parts: Any) -> Any:
    """The value of the first data part (a typed agent's), else None."""
    from google.protobuf.json_format import MessageToDict

    for part in parts:
        if part.HasField("data"):
            return _whole_numbers(MessageToDict(part.data))
    return None


def _whole_numbers(value: Any) -> Any:
    """A protobuf Value holds numbers as doubles: whole ones back to ints."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: _whole_numbers(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_whole_numbers(v) for v in value]
    return value


def _value(struct_pb2: Any, data: Any) -> Any:
    value = struct_pb2.Value()
    value.struct_value.update(data)
    return value


def _answer_object(text: str) -> dict[str, Any] | None:
    """``text`` as a harnessc answer object (results, approvals, budget), else None."""
    if not text.lstrip().startswith("{"):
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    if isinstance(value, dict) and value and set(value) <= _ANSWER_KEYS:
        return value
    return None


def _say(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def _error(text: str) -> ToolResult:
    return ToolResult([TextContent(text)], is_error=True)
