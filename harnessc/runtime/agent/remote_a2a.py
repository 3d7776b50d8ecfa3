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

In a durable run (``steps``: ``RemoteSteps``) a send is two steps of the run: ``sent``
records the task's id once the remote acknowledged the message (at most once: a send an
earlier execution started and did not record is not made again), ``ended`` the task's
last state. A run recovered after its worker stopped between them re-attaches to the
same task by its id (``SubscribeToTask``, else ``GetTask`` until it stops working)
instead of sending it again; a recorded end is replayed without asking the remote.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import uuid
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

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
    "RemoteSteps",
    "cancel_task",
    "card_address",
]

CARD_PATH = "/.well-known/agent-card.json"
INPUT_TOOL = "a2a_input"  # the call a remote agent's question waits on
_ANSWER_KEYS = frozenset({"results", "approvals", "budget"})
_USAGE = ("turns", "tool_calls", "input_tokens", "output_tokens", "cost_usd")
# a task's states while it works (TASK_STATE_SUBMITTED, TASK_STATE_WORKING)
_WORKING = frozenset({1, 2})
_POLL_S = 0.5  # between GetTask calls while a re-attached task works
LOST = (
    "The worker running this durable run stopped while it sent this hand-over to the "
    "remote agent, before the remote's task was recorded. It was not sent again: the "
    "remote agent may or may not have started it."
)


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


# The clients of the remote agents this process hands work to, one per remote (its URL,
# headers and timeout) and event loop: a hand-over after the first neither builds an
# HTTP client (an httpx client's TLS set-up is most of a first hand-over's CPU) nor
# reads the card again. Kept until the loop goes away or an exchange fails.
_CLIENTS: weakref.WeakKeyDictionary[
    asyncio.AbstractEventLoop, dict[tuple[Any, ...], asyncio.Task[Any]]
] = weakref.WeakKeyDictionary()


def _key(remote: RemoteA2A) -> tuple[Any, ...]:
    return (remote.url, tuple(sorted(remote.headers.items())), remote.timeout_s)


async def shared_client(remote: RemoteA2A, name: str) -> Any:
    """The a2a-sdk's streaming client of ``remote`` in this event loop, made from its card
    on first use (a card that cannot be read is a ``_CardError``, and nothing is kept)."""
    clients = _CLIENTS.setdefault(asyncio.get_running_loop(), {})
    key = _key(remote)
    made = clients.get(key)
    if made is None:
        made = clients[key] = asyncio.ensure_future(_make_client(remote))
        made.add_done_callback(_retrieved)
    try:
        client, _ = await asyncio.shield(made)  # a caller cancelled leaves it to the others
    except Exception as exc:
        if clients.get(key) is made:
            del clients[key]
        raise _CardError(f"Remote agent {name}: cannot read its card: {_say(exc)}") from exc
    return client


def _retrieved(made: asyncio.Task[Any]) -> None:
    if not made.cancelled():
        made.exception()  # read: a failure its callers already reported is not logged


async def _make_client(remote: RemoteA2A) -> tuple[Any, Any]:
    import httpx
    from a2a.client import ClientConfig, create_client

    base, card_path = card_address(remote.url)
    timeout = httpx.Timeout(remote.timeout_s, connect=30.0)
    http = httpx.AsyncClient(headers=dict(remote.headers), timeout=timeout)
    try:
        client = await create_client(
            base,
            client_config=ClientConfig(streaming=True, httpx_client=http),
            relative_card_path=card_path,
        )
    except BaseException:
        await http.aclose()
        raise
    return client, http


async def drop_client(remote: RemoteA2A) -> None:
    """Forget ``remote``'s client in this event loop and close it."""
    clients = _CLIENTS.get(asyncio.get_running_loop(), {})
    made = clients.pop(_key(remote), None)
    if made is None or not made.done() or made.cancelled() or made.exception() is not None:
        return
    client, http = made.result()
    with contextlib.suppress(Exception):
        await client.close()
    with contextlib.suppress(Exception):
        await http.aclose()


Emit = Callable[[Event], Awaitable[Any]]
Work = Callable[[], Awaitable[Any]]


class RemoteSteps(Protocol):
    """How a durable run records a send to a remote agent: each is one step of the run,
    its value recorded and, in a later execution, returned without running ``work``."""

    async def sent(self, work: Work) -> Any:
        """``work()`` at most once in the run: None when an earlier execution started it
        and stopped before its value was recorded."""
        ...

    async def ended(self, work: Work) -> Any: ...


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
        steps: RemoteSteps | None = None,
    ) -> None:
        self.remote = remote
        self.steps = steps
        self.name = name
        self.path = path
        self.call_id = call_id
        self.emit = emit
        self.usage = usage  # the parent's: what the remote reports is added to it
        self.task_id = ""
        self.context_id = ""
        self.counted: dict[str, float] = {}  # the remote run's usage counted so far
        self.state: Any = None  # the task's last state, message and artifacts
        self.status_message: Any = None
        self.artifacts: dict[str, Any] = {}
        self.acked = asyncio.Event()  # the remote's first answer to the message came

    async def run(
        self,
        prompt: str,
        signal: AbortSignal,
        nested: dict[str, Any] | None,
        answers: dict[str, Any] | None,
    ) -> ToolResult:
        """Send the task (or the answer to its question, ``nested`` naming the task
        paused before); the result, or HoldCall when the remote waits for input."""
        message = self._first(prompt) if not nested else self._reply(nested, answers or {})
        return await self._send(message, signal)

    @contextlib.asynccontextmanager
    async def _client(self) -> AsyncIterator[Any]:
        """The a2a-sdk's client of the remote agent (``shared_client``); an exchange that
        fails drops it, so the next hand-over reads the card again."""
        client = await shared_client(self.remote, self.name)
        try:
            yield client
        except Exception:
            await drop_client(self.remote)
            raise

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

    async def _send(self, message: Any, signal: AbortSignal) -> ToolResult:
        from a2a.types import a2a_pb2 as a2a

        request = a2a.SendMessageRequest(message=message)
        if self.steps is None:
            failed = await self._watch(signal, self._sending(request))
            if failed is not None:
                return failed
        else:
            ended = await self._durable(request, signal, self.steps)
            if "error" in ended:
                return _error(str(ended["error"]))
            self._restore(ended)
        return self._outcome(self.state, self.status_message, list(self.artifacts.values()))

    async def _sending(self, request: Any) -> None:
        async with self._client() as client:
            await self._follow(client.send_message(request))

    async def _durable(
        self, request: Any, signal: AbortSignal, steps: RemoteSteps
    ) -> dict[str, Any]:
        """The send as two steps of the durable run: the task's ids once the remote
        acknowledged the message, then its end, followed on the task this or an earlier
        execution of the run sent."""
        work: asyncio.Future[ToolResult | None] | None = None

        async def send() -> dict[str, str]:
            nonlocal work
            work = asyncio.ensure_future(self._watch(signal, self._sending(request)))
            acked = asyncio.ensure_future(self.acked.wait())
            await asyncio.wait({work, acked}, return_when=asyncio.FIRST_COMPLETED)
            acked.cancel()
            return {"task_id": self.task_id, "context_id": self.context_id}

        async def end() -> dict[str, Any]:
            if work is not None:
                failed = await work
            elif self.task_id:
                failed = await self._watch(signal, self._reattach())
            else:  # answered without a task, and the answer was not recorded
                return {"error": LOST}
            if failed is not None:
                return {"error": _text(failed.content)}
            return self._record()

        sent = await steps.sent(send)
        if sent is None:
            return {"error": LOST}
        self.task_id = str(sent.get("task_id") or self.task_id)
        self.context_id = str(sent.get("context_id") or self.context_id)
        ended: dict[str, Any] = await steps.ended(end)
        return ended

    async def _watch(self, signal: AbortSignal, follow: Awaitable[None]) -> ToolResult | None:
        """``follow`` until it ends (None), fails (an error result) or the parent aborts
        (the remote task is cancelled)."""
        work = asyncio.ensure_future(follow)

        def stop_work() -> None:
            work.cancel()

        stop = signal.add_listener(stop_work)
        try:
            await work
        except asyncio.CancelledError:
            if signal.aborted:
                await self._cancel_by_id()
            raise
        except _CardError as exc:
            return _error(str(exc))
        except Exception as exc:
            return _error(f"Remote agent {self.name} failed: {_say(exc)}")
        finally:
            stop()
        return None

    async def _follow(self, stream: Any, *, until_stopped: bool = False) -> None:
        """The task's updates from ``stream`` (``StreamResponse`` items); ``until_stopped``:
        leave once the task ends or waits for input (a subscription stays open)."""
        from a2a.types import a2a_pb2 as a2a

        async for item in stream:
            self.acked.set()
            if item.HasField("task"):
                self._take_task(item.task)
            elif item.HasField("status_update"):
                update = item.status_update
                self.task_id = update.task_id or self.task_id
                self.context_id = update.context_id or self.context_id
                self.state, self.status_message = update.status.state, update.status.message
                await self._notice(f"status: {a2a.TaskState.Name(self.state)}")
            elif item.HasField("artifact_update"):
                artifact = item.artifact_update.artifact
                self.artifacts[artifact.artifact_id] = artifact
                await self._notice(f"artifact {artifact.name or artifact.artifact_id}")
            elif item.HasField("message"):
                self.status_message = item.message
                self.state = a2a.TaskState.TASK_STATE_COMPLETED
            self._count(self.status_message)
            if until_stopped and self.state not in _WORKING:
                return

    def _take_task(self, task: Any) -> None:
        self.task_id, self.context_id = task.id, task.context_id
        self.state, self.status_message = task.status.state, task.status.message
        for artifact in task.artifacts:
            self.artifacts[artifact.artifact_id] = artifact

    async def _reattach(self) -> None:
        """Follow the task an earlier execution of the run sent: its subscription, else
        (a task that ended, a server that keeps no stream) ``GetTask`` until it stops
        working."""
        from a2a.types import a2a_pb2 as a2a

        async with self._client() as client:
            with contextlib.suppress(Exception):  # GetTask below says what went wrong
                subscription = client.subscribe(a2a.SubscribeToTaskRequest(id=self.task_id))
                await self._follow(subscription, until_stopped=True)
            while self.state is None or self.state in _WORKING:
                task = await client.get_task(a2a.GetTaskRequest(id=self.task_id))
                self._take_task(task)
                self._count(self.status_message)
                if self.state in _WORKING:
                    await asyncio.sleep(_POLL_S)

    def _record(self) -> dict[str, Any]:
        """What the ``ended`` step records: the task's last state, message, artifacts
        and the usage counted (protobuf messages as base64 of their bytes)."""
        message = self.status_message
        return {
            "task_id": self.task_id,
            "context_id": self.context_id,
            "state": int(self.state) if self.state is not None else None,
            "message": _pack(message) if message is not None and message.ByteSize() else None,
            "artifacts": [_pack(a) for a in self.artifacts.values()],
            "counted": dict(self.counted),
        }

    def _restore(self, ended: dict[str, Any]) -> None:
        """The recorded end back; the usage an earlier execution counted is added to
        the parent's (a replayed step counts nothing itself)."""
        from a2a.types import a2a_pb2 as a2a

        self.task_id = str(ended.get("task_id") or self.task_id)
        self.context_id = str(ended.get("context_id") or self.context_id)
        self.state = ended.get("state")
        packed = ended.get("message")
        self.status_message = _unpack(a2a.Message(), packed) if packed else None
        self.artifacts = {}
        for item in ended.get("artifacts") or []:
            artifact = _unpack(a2a.Artifact(), item)
            self.artifacts[artifact.artifact_id] = artifact
        counted = {k: float(v) for k, v in (ended.get("counted") or {}).items()}
        self._add_usage({k: v - self.counted.get(k, 0.0) for k, v in counted.items()})
        self.counted = counted

    async def _cancel_by_id(self) -> None:
        """The parent's abort: cancel the remote task (best effort, bounded)."""
        if self.task_id:
            await asyncio.shield(cancel_task(self.remote, self.task_id))

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
        self._add_usage(delta)

    def _add_usage(self, delta: dict[str, float]) -> None:
        delta = {k: max(0.0, v) for k, v in delta.items()}
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


class _CardError(Exception):
    """The remote agent's card could not be read (its text says so)."""


def _pack(message: Any) -> str:
    return base64.b64encode(message.SerializeToString()).decode("ascii")


def _unpack(empty: Any, packed: str) -> Any:
    empty.ParseFromString(base64.b64decode(packed))
    return empty


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
