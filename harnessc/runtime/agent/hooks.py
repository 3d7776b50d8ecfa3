"""The hook runner and its typed registry (moment -> event type, result type).

Handlers run in registration order, sync or async. An acting moment's result is coerced
to the moment's result type (a dict with the same keys is accepted) and applied by the
caller's ``on_result`` before the next handler runs, so chained handlers see each
other's changes. A raising handler, and one whose result the moment cannot read (a
string, a dict with an unknown key), is reported as an error event naming it and
skipped; callers that must fail closed (``tool_call``) pass ``fail`` to learn about it.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from msgspec import Struct

from harnessc.runtime.core.budget import Budget
from harnessc.runtime.core.events import ErrorEvent, event_matches
from harnessc.runtime.core.hooks import (
    EVENT_ALIASES,
    AfterPlanEvent,
    AfterPlanResult,
    AfterProviderResponseEvent,
    BeforeAgentStartEvent,
    BeforeAgentStartResult,
    BeforeProviderPayloadEvent,
    BeforeProviderPayloadResult,
    BeforeProviderRequestEvent,
    BeforeProviderRequestResult,
    BeforeStopEvent,
    ContextEvent,
    ContextResult,
    FailRun,
    HookProtocolError,
    HookSpec,
    PauseRun,
    SessionBeforeCompactEvent,
    SessionBeforeCompactResult,
    SessionBeforeTreeEvent,
    SessionBeforeTreeResult,
    StopDecision,
    ToolCallEvent,
    ToolCallResult,
    ToolResultEvent,
    ToolResultPatch,
    accepts_context,
    canonical_hook_name,
    hook_result_problem,
)
from harnessc.runtime.core.messages import UserMessage

if TYPE_CHECKING:
    from harnessc.runtime.options.harness_context import HarnessContext

__all__ = ["HOOK_REGISTRY", "HookMoment", "HookRunner", "coerce"]


class HookMoment(Struct, frozen=True):
    event: type[Any]
    result: type[Any] | None


HOOK_REGISTRY: dict[str, HookMoment] = {
    "before_agent_start": HookMoment(BeforeAgentStartEvent, BeforeAgentStartResult),
    "context": HookMoment(ContextEvent, ContextResult),
    "before_provider_request": HookMoment(BeforeProviderRequestEvent, BeforeProviderRequestResult),
    "before_provider_payload": HookMoment(BeforeProviderPayloadEvent, BeforeProviderPayloadResult),
    "after_provider_response": HookMoment(AfterProviderResponseEvent, None),
    "after_plan": HookMoment(AfterPlanEvent, AfterPlanResult),
    "tool_call": HookMoment(ToolCallEvent, ToolCallResult),
    "tool_result": HookMoment(ToolResultEvent, ToolResultPatch),
    "before_stop": HookMoment(BeforeStopEvent, StopDecision),
    "on_budget_exceeded": HookMoment(Any, Budget),  # type: ignore[arg-type]
    "session_before_compact": HookMoment(SessionBeforeCompactEvent, SessionBeforeCompactResult),
    "session_before_tree": HookMoment(SessionBeforeTreeEvent, SessionBeforeTreeResult),
}


def coerce(result: Any, cls: type[Any]) -> Any:
    """A hook result as ``cls``: passes instances through, builds from dicts."""
    if isinstance(result, cls):
        return result
    if isinstance(result, dict):
        fields = getattr(cls, "__struct_fields__", ())
        data = {k: v for k, v in result.items() if k in fields}
        if cls is StopDecision and "continue" in result:
            data["continue_"] = bool(result["continue"])
            messages = result.get("messages") or []
            if isinstance(result.get("message"), str):
                messages = [UserMessage(result["message"])]
            data["messages"] = [UserMessage(m) if isinstance(m, str) else m for m in messages]
        return cls(**data)
    if isinstance(result, bool) and cls is ToolCallResult:
        return ToolCallResult(block=not result)
    return cls()


class _Handler(Struct):
    fn: Callable[..., Any]
    takes_host: bool
    spec: HookSpec | None = None
    filter: Callable[[Any], bool] | None = None

    @property
    def label(self) -> str:
        spec = self.spec
        if spec is not None and spec.name:
            return spec.name
        return str(getattr(self.fn, "__qualname__", "handler"))


_NO_HANDLERS: dict[str, list[_Handler]] = {}  # never written


class HookRunner:
    """Handlers by canonical moment; ``host`` is what two-argument handlers receive,
    and where a failed handler is reported (an ``error`` event; none once it is None)."""

    __slots__ = ("handlers", "host")

    def __init__(self) -> None:
        # The first handler replaces the shared empty map (a harness without hooks,
        # most of a service's, holds none).
        self.handlers: dict[str, list[_Handler]] = _NO_HANDLERS
        self.host: HarnessContext | None = None

    def add(
        self, name: str, handler: Callable[..., Any], spec: HookSpec | None = None
    ) -> Callable[[], None]:
        canonical = canonical_hook_name(name)
        alias = EVENT_ALIASES.get(name)
        event_filter: Callable[[Any], bool] | None = None
        if alias is not None and alias[1] is not None:
            event_filter = functools.partial(event_matches, name)
        entry = _Handler(handler, accepts_context(handler), spec, event_filter)
        if self.handlers is _NO_HANDLERS:
            self.handlers = {}
        self.handlers.setdefault(canonical, []).append(entry)

        def remove() -> None:
            handlers = self.handlers.get(canonical, [])
            if entry in handlers:
                handlers.remove(entry)

        return remove

    def has(self, moment: str) -> bool:
        return bool(self.handlers.get(moment))

    async def run(
        self,
        moment: str,
        event: Any,
        tool_name: str | None = None,
        *,
        fail: list[str] | None = None,
        on_result: Callable[[Any], None] | None = None,
    ) -> list[Any]:
        """Run the handlers of ``moment`` in order; returns their non-None results."""
        out: list[Any] = []
        for handler in list(self.handlers.get(moment, ())):
            spec = handler.spec
            if spec is not None and tool_name is not None and not spec.matches_tool(tool_name):
                continue
            if handler.filter is not None and not handler.filter(event):
                continue
            try:
                result = handler.fn(event, self.host) if handler.takes_host else handler.fn(event)
                if inspect.isawaitable(result):
                    timeout = spec.timeout_s if spec is not None else None
                    result = await (asyncio.wait_for(result, timeout) if timeout else result)
            except (asyncio.CancelledError, FailRun, PauseRun):
                raise  # FailRun: the handler ends the run (fail closed); PauseRun pauses it
            except (Exception, SystemExit) as exc:  # a hook's sys.exit() must not end the agent
                await self._failed(moment, handler, exc, "failed", fail)
                continue
            if result is None:
                continue
            problem = hook_result_problem(moment, result) if moment in HOOK_REGISTRY else None
            if problem is not None:  # unreadable: reported, and at tool_call it blocks
                await self._failed(moment, handler, HookProtocolError(problem), "returned", fail)
                continue
            if on_result is not None:
                try:
                    on_result(result)  # chained moments: the next handler sees the change
                except Exception as exc:
                    await self._failed(moment, handler, exc, "returned", fail)
                    continue
            out.append(result)
        return out

    async def _failed(
        self, moment: str, handler: _Handler, exc: BaseException, what: str, fail: Any
    ) -> None:
        from harnessc.runtime.core.events import describe_exception

        if what == "returned":
            message = f"hook {moment} ({handler.label}) returned an unusable result: "
        else:
            message = f"hook {moment} ({handler.label}) failed: "
        message += describe_exception(exc)
        if fail is not None:
            fail.append(message)
        if moment != "error" and self.host is not None:
            await self.host.emit(ErrorEvent(source=f"hook:{moment}", message=message))
