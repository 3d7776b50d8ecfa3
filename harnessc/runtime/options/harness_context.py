"""What extensions, compaction and tree moves see of a harness (``HarnessContext``),
and what the loop asks of an extension and of a compaction pipeline. ``AgentHarness``
satisfies ``HarnessContext``; nothing else of the harness is part of the seam."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from harnessc.runtime.core.budget import BudgetTracker
    from harnessc.runtime.core.commands import CommandRegistry
    from harnessc.runtime.core.events import Event
    from harnessc.runtime.core.messages import Message
    from harnessc.runtime.core.options import (
        AgentHarnessStreamOptions,
        Model,
        ToolContextSource,
    )
    from harnessc.runtime.core.signal import AbortSignal
    from harnessc.runtime.options.harness_options import AgentHarnessOptions
    from harnessc.runtime.providers.base import Provider
    from harnessc.runtime.session.session import Session
    from harnessc.runtime.tools.base import AgentTool

__all__ = ["CompactionPipeline", "Extension", "HarnessContext"]


class HarnessContext(Protocol):
    """What an extension (and compaction, and a tree move) may use of a harness.

    ``AgentHarness`` satisfies it; nothing else of the harness is part of the seam.
    """

    session: Session
    commands: CommandRegistry
    compaction_settings: Any  # CompactionSettings, set by the compaction extension
    compactor: Any  # replaces the session summary compaction when set
    # The compaction pipeline (the compaction extension): when set it owns the trigger
    # (the loop's own threshold check is off) and overflow recovery runs it.
    compaction_pipeline: CompactionPipeline | None

    @property
    def options(self) -> AgentHarnessOptions:
        """The options the harness was made with (hooks, extensions, tool context)."""

    @property
    def messages(self) -> list[Message]: ...

    @property
    def model(self) -> Model: ...

    @property
    def models(self) -> dict[str, Model]: ...

    @property
    def active_tool_names(self) -> list[str]: ...

    @property
    def tool_context(self) -> ToolContextSource:
        """Where the tools' context comes from (the current source)."""

    def set_tool_context(self, source: ToolContextSource) -> None: ...

    @property
    def stream_options(self) -> AgentHarnessStreamOptions: ...

    @property
    def budget(self) -> BudgetTracker: ...

    @property
    def is_busy(self) -> bool: ...

    @property
    def tools(self) -> dict[str, AgentTool]:
        """Every tool the agent has, by name (a copy)."""

    @property
    def signal(self) -> AbortSignal | None:
        """The abort signal of the running run (None when idle)."""

    def on(self, name: str, handler: Callable[..., Any]) -> Callable[[], None]: ...

    def subscribe(self, listener: Callable[[Event], Any]) -> Callable[[], None]: ...

    async def emit(self, event: Event) -> list[Any]: ...

    async def notice(self, source: str, message: str, level: str = "info") -> None: ...

    def add_tools(self, tools: Iterable[AgentTool], *, activate: bool = True) -> None: ...

    def remove_tools(self, names: Iterable[str]) -> list[str]: ...

    def on_close(self, callback: Callable[[], Awaitable[None]]) -> None:
        """Run ``callback`` when the harness closes (stop a server, flush a file)."""

    async def call_hooks(
        self, moment: str, event: Any, tool_name: str | None = None
    ) -> list[Any]: ...

    def has_handlers(self, moment: str) -> bool: ...

    def provider_for(self, model: Model) -> Provider: ...

    def reload_messages(self) -> None: ...

    def context_tokens(self, use_usage: bool = True) -> int: ...

    async def compact(
        self, custom_instructions: str | None = None, *, reason: str = "manual"
    ) -> Any: ...


class CompactionPipeline(Protocol):
    """What the loop asks of an installed compaction pipeline."""

    async def recover(self, harness: HarnessContext) -> bool:
        """Compact after a context overflow (every service, forced); True when it did."""


@runtime_checkable
class Extension(Protocol):
    """A hook provider: ``install`` registers handlers, tools and /commands on a harness."""

    name: str

    @property
    def command_names(self) -> tuple[str, ...]: ...

    def install(self, harness: HarnessContext) -> None: ...
