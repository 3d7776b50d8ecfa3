"""A run as every door sees it: the ``Run`` record (status, pause, result, usage) and its
events, each encoded once as it comes (the object ``--json`` prints, as compact JSON) so
a stream can replay them from any index, and the wait for its next change.

The wait cannot miss a change: a waiter says which change it has seen (``version``,
read before it looked at the events and the status) and returns at once when the run
has moved past it; otherwise it waits on a future of its own, which every change
completes. Nothing is read when the wait starts running, so a change made between the
look and the wait (a task that starts late, as ``asyncio.wait_for`` made one on
Python 3.11) is never lost.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import msgspec

from harnessc.runtime.core.events import Event
from harnessc.runtime.runs.pauses import Pause
from harnessc.runtime.runs.usage import RunUsage

__all__ = [
    "ENDED",
    "KEEP_ALIVE_S",
    "PAUSED",
    "WORKING",
    "Run",
    "encode_event",
    "encode_event_data",
    "event_type",
    "follow",
]

KEEP_ALIVE_S = 15.0  # a stream with nothing to send says so this often
# A run's status: working, waiting at a pull point, or ended.
WORKING = ("queued", "running")
PAUSED = ("paused", "awaiting_tool")
ENDED = ("done", "aborted", "error")


# msgspec's encoder writes the event's dict in a tenth of the time of ``json.dumps``
# (compact: no spaces after the separators); ``str`` of a value it does not know, as
# ``default=str`` gives.
_ENCODER = msgspec.json.Encoder(enc_hook=str)
_TYPE_HEAD = '{"type":"'


def encode_event_data(data: dict[str, Any]) -> str:
    """An event's dict (``Event.to_dict``, or one a durable run recorded) as one compact
    JSON object."""
    try:
        return _ENCODER.encode(data).decode()
    except (msgspec.EncodeError, TypeError, ValueError, OverflowError):
        # keys msgspec does not take (a bool or None key): as json writes them
        return json.dumps(data, ensure_ascii=False, default=str, separators=(",", ":"))


def encode_event(event: Event) -> str:
    """An event as the agent's ``--json`` prints it (one JSON object, compact)."""
    return encode_event_data(event.to_dict())


def event_type(encoded: str) -> str | None:
    """The ``type`` of an encoded event read off its start, without decoding it; None
    when it does not start with its type."""
    if not encoded.startswith(_TYPE_HEAD):
        return None
    end = encoded.find('"', len(_TYPE_HEAD))
    return encoded[len(_TYPE_HEAD) : end] if end > 0 else None


class Run:
    """One run: its id and session, where it stands, its result once it has one.

    ``status``: ``queued`` (a durable run no worker took yet), ``running``, ``paused`` /
    ``awaiting_tool`` (``pause`` says what it waits for), ``done``, ``aborted`` or
    ``error`` (``reason`` says why; for ``done`` the finish reason). ``text`` is the
    final text, ``output`` the typed value as JSON (an agent with ``output:``),
    ``usage`` what the run used so far, over all its parts.
    """

    __slots__ = (
        "id",
        "session_id",
        "status",
        "reason",
        "text",
        "output",
        "usage",
        "agents",
        "pause",
        "reply",
        "events",
        "keep_events",
        "listeners",
        "version",
        "_waiters",
        "__weakref__",
    )

    def __init__(self, id: str, session_id: str = "", status: str = "running") -> None:  # noqa: A002
        self.id = id
        self.session_id = session_id
        self.status = status
        self.reason = ""
        self.text = ""
        self.output: Any = None
        self.usage = RunUsage()
        self.agents: dict[str, Any] | None = None  # usage by agent path, from agent_end
        self.pause: Pause | None = None
        self.reply: str | None = None  # a /command's answer (no model call)
        self.events: list[str] = []  # encoded; a stream's event id is index + 1
        self.keep_events = True  # False: the events go to the listeners only (a terminal)
        self.listeners: list[Callable[[Event], Any]] = []  # live events, in this process
        self.version = 0  # counts the changes (events, status)
        self._waiters: list[asyncio.Future[None]] = []

    # -- where it stands ---------------------------------------------------------------

    @property
    def working(self) -> bool:
        return self.status in WORKING

    @property
    def paused(self) -> bool:
        return self.status in PAUSED

    @property
    def over(self) -> bool:
        """Nothing more comes on this run's stream until it is answered."""
        return not self.working

    @property
    def finish_reason(self) -> str | None:
        """Why a run that ended ``done`` finished (``goal_met``, ``final_result``...)."""
        return self.reason if self.status == "done" else None

    # -- changes -----------------------------------------------------------------------

    def add(self, event: Event) -> None:
        """An event of the run (a harness subscriber)."""
        self.usage.count(event)
        if event.type == "agent_end":
            self._by_agent(getattr(event, "usage", None))
        if self.keep_events:
            self.events.append(encode_event(event))
        for listener in self.listeners:
            listener(event)
        self.changed()

    def add_recorded(self, event: dict[str, Any]) -> None:
        """An event in its JSON form (one a durable run's steps recorded)."""
        self.usage.count_recorded(event)
        if event.get("type") == "agent_end":
            self._by_agent(event.get("usage"))
        self.events.append(encode_event_data(event))

    def _by_agent(self, tree: Any) -> None:
        """The tree's usage by agent path, as the run's ``agent_end`` reports it."""
        agents = tree.get("agents") if isinstance(tree, dict) else None
        if isinstance(agents, dict):
            self.agents = agents

    def changed(self) -> None:
        """Say the run changed (its events, its status): every waiter wakes."""
        self.version += 1
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)

    async def wait(self, seen: int, timeout: float | None = None) -> None:
        """Return once the run has changed since version ``seen`` (at once if it has);
        TimeoutError after ``timeout`` seconds without a change."""
        if self.version != seen:
            return
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[None] = loop.create_future()
        self._waiters.append(waiter)
        # the timeout ends the waiter itself (a timer handle: no task is cancelled)
        timer = None if timeout is None else loop.call_later(timeout, _time_out, waiter)
        try:
            await waiter
        finally:
            if timer is not None:
                timer.cancel()
                if waiter.done() and not waiter.cancelled():
                    waiter.exception()  # retrieved, also when this task was cancelled
            if waiter in self._waiters:
                self._waiters.remove(waiter)

    async def settled(self) -> None:
        """Wait until the run ends or pauses."""
        while not self.over:
            await self.wait(self.version)

    # -- as the native API shows it ----------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        pause = self.pause if self.paused else None
        return {
            "run_id": self.id,
            "session_id": self.session_id or None,
            "status": self.status,
            "reason": self.reason,
            "text": self.text,
            "output": self.output,
            "usage": self.usage.to_dict(),
            "usage_by_agent": self.agents,
            "pause": pause.to_dict() if pause is not None else None,
            "pending_tool_calls": [
                {"id": c.id, "name": c.name, "arguments": c.arguments}
                | ({"fingerprint": c.fingerprint} if c.held else {})
                for c in (pause.calls if pause is not None else [])
            ],
            "events": len(self.events),
        }


def _time_out(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_exception(TimeoutError())


async def follow(
    run: Run,
    after: int = 0,
    keep_alive_s: float = KEEP_ALIVE_S,
    wait: Callable[[Run, int, float], Any] | None = None,
) -> AsyncIterator[tuple[int, str] | None]:
    """The run's events after number ``after`` as (index, encoded event), then the new
    ones as they come, until the run ends or pauses; None when ``keep_alive_s`` passed
    without one (a stream's keep-alive). ``wait(run, seen, timeout)``: how to wait for
    the run's next change (default ``run.wait``; a durable run reads its records
    meanwhile). A reader that goes away stops only its stream, never the run."""
    index = after
    waiting = wait or (lambda r, seen, timeout: r.wait(seen, timeout))
    while True:
        seen = run.version
        while index < len(run.events):
            yield index, run.events[index]
            index += 1
        if run.over:
            return
        try:
            await waiting(run, seen, keep_alive_s)
        except TimeoutError:
            yield None
