"""session_index (also built as ``hook/session-index``): keep the sessions' full-text index fresh.

After each successful turn (``turn_end`` whose model reply did not fail: DESIGN.md's
"turn finished" row; one model call plus its tool batch) and at every ``agent_pause``
(a budget or review pause, or a wait for external tool results, which ends a run in
the middle of a turn) the SQLite FTS5 index of the session files is refreshed in the
background: a task running the refresh in a worker thread, never
awaited by the run. Refreshes do not pile up: one asked for while another runs is done
once afterwards. A failure is reported as an error event (source
``extension:session_index``) and never stops the agent. Contributes ``/search QUERY``.

The sessions root is ``root`` when given, else the folder two levels above the session
file (``<root>/<cwd-slug>/<file>.jsonl``, the JSONL repo layout).
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harnessc.runtime.core.events import ErrorEvent
from harnessc.runtime.extensions.base import ExtensionConfigError, decode_config

if TYPE_CHECKING:
    from harnessc.runtime.options.harness_context import HarnessContext

__all__ = ["SessionIndexConfig", "SessionIndexExtension"]

NAME = "session_index"
FAILED_REPLIES = frozenset({"error", "aborted"})  # turn_end replies that refresh nothing


@dataclass(slots=True)
class SessionIndexConfig:
    root: str | None = None  # the sessions root; default: from the session file
    search_limit: int = 10  # /search results (at most 50)
    contribute_commands: bool = True  # register /search

    def set_defaults(self) -> None:
        if self.search_limit == 0:
            self.search_limit = 10

    def validate(self) -> None:
        if not 0 < self.search_limit <= 50:
            raise ExtensionConfigError(
                f"must be between 1 and 50 (got {self.search_limit})",
                extension=NAME,
                field="search_limit",
            )
        if self.root is not None and not self.root.strip():
            raise ExtensionConfigError("must not be empty", extension=NAME, field="root")


class SessionIndexExtension:
    """Refreshes a ``SessionIndex`` after each successful turn, off the run's path."""

    name = NAME

    def __init__(self, config: SessionIndexConfig | dict[str, Any] | None = None) -> None:
        self.config = decode_config(SessionIndexConfig, config, extension=NAME)
        self.index: Any = None
        self.refreshes = 0  # completed refreshes
        self._harness: HarnessContext | None = None
        self._task: asyncio.Task[None] | None = None
        self._again = False

    @classmethod
    def from_config(cls, data: dict[str, Any] | None) -> SessionIndexExtension:
        return cls(data)

    @property
    def command_names(self) -> tuple[str, ...]:
        return ("search",) if self.config.contribute_commands else ()

    def install(self, harness: HarnessContext) -> None:
        self._harness = harness
        harness.on("turn_end", self._on_turn_end)
        harness.on("agent_pause", self._on_turn_end)  # a wait for a tool ends mid-turn
        if self.config.contribute_commands:
            harness.commands.register(
                "search", "search the past sessions (FTS5 query)", self.search_command, source=NAME
            )

    def root(self) -> Path | None:
        if self.config.root:
            return Path(os.path.expanduser(self.config.root))
        path = getattr(getattr(self._harness, "session", None), "path", None)
        if not path:
            return None
        return Path(path).resolve().parent.parent

    def _get_index(self) -> Any:
        if self.index is None:
            root = self.root()
            if root is None:
                return None
            from harnessc.runtime.session.index import SessionIndex

            self.index = SessionIndex(root)
        return self.index

    # -- the background refresh ----------------------------------------------------

    def _on_turn_end(self, event: Any, harness: HarnessContext) -> None:
        message = getattr(event, "message", None)
        if event.type == "turn_end" and getattr(message, "stop_reason", None) in FAILED_REPLIES:
            return
        self.schedule()

    def schedule(self) -> None:
        """Start a background refresh (or ask the running one to go once more)."""
        if self._task is not None and not self._task.done():
            self._again = True
            return
        self._task = asyncio.ensure_future(self._refresh_loop())

    async def _refresh_loop(self) -> None:
        while True:
            self._again = False
            await self._refresh_once()
            if not self._again:
                return

    async def _refresh_once(self) -> None:
        harness = self._harness
        try:
            index = self._get_index()
            if index is None:  # a session kept in memory (--no-session): nothing to index
                return
            await asyncio.to_thread(index.refresh)
            self.refreshes += 1
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            if harness is not None:
                await self._report(f"index refresh failed: {type(exc).__name__}: {exc}")

    async def _report(self, message: str) -> None:
        if self._harness is not None:
            await self._harness.emit(ErrorEvent(source=f"extension:{NAME}", message=message))

    async def wait_idle(self) -> None:
        """Wait for the background refresh, if one runs (tests, shutdown)."""
        while self._task is not None and not self._task.done():
            await asyncio.wait({self._task})

    def close(self) -> None:
        if self.index is not None:
            self.index.close()
            self.index = None

    # -- /search -----------------------------------------------------------------------

    async def search_command(self, args: str = "") -> str:
        query = args.strip()
        if not query:
            return 'usage: /search QUERY (FTS5 syntax: words, "phrases", AND/OR/NOT, prefix*)'
        await self.wait_idle()
        index = self._get_index()
        if index is None:
            return "no session index: the session has no file and no root is configured"
        try:
            await asyncio.to_thread(index.refresh)
            hits = await asyncio.to_thread(index.search, query, self.config.search_limit)
        except ValueError as exc:  # SearchQueryError
            return str(exc)
        except Exception as exc:
            return f"search failed: {type(exc).__name__}: {exc}"
        if not hits:
            return f"no matches for {query!r}"
        lines = [f"{len(hits)} match(es) for {query!r}:"]
        for hit in hits:
            snippet = " ".join(str(hit.snippet).split())
            lines.append(f"- {hit.session_id[:8]} {hit.role} ({hit.entry_id}): {snippet}")
        return "\n".join(lines)
