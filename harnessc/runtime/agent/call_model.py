"""Call the model: context hooks, request options, the provider stream, the reply recorded.

The turn's second stage (``plan`` calls it): ``make_request`` runs the ``context`` and
``before_provider_request`` hooks and makes the request, ``stream_reply`` streams it.
The reply is appended to the context (and the session) before it is returned; a
failure becomes an ``error`` reply, an abort an ``aborted`` one (and CancelledError).
When a wall-clock budget is set, the call has one deadline (``BudgetTracker.deadline``):
the request carries it, the harness stops reading when it passes, and a reply that
failed once it had passed, whoever noticed first, is ``WALL_CLOCK_STOP``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any

from msgspec.structs import replace

from harnessc.runtime.agent.budget_gate import count_reply
from harnessc.runtime.agent.hooks import coerce
from harnessc.runtime.agent.parts import AgentParts
from harnessc.runtime.agent.run_state import RunState
from harnessc.runtime.core.events import (
    MessageStartEvent,
    MessageUpdateEvent,
    ModelFallbackEvent,
    NoticeEvent,
    ProviderResponseEvent,
    RetryEvent,
    describe_exception,
)
from harnessc.runtime.core.hooks import (
    AfterProviderResponseEvent,
    BeforeProviderPayloadEvent,
    BeforeProviderPayloadResult,
    BeforeProviderRequestEvent,
    BeforeProviderRequestResult,
    ContextEvent,
    ContextResult,
)
from harnessc.runtime.core.messages import (
    AssistantMessage,
    CustomMessage,
    Message,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from harnessc.runtime.core.options import AgentHarnessStreamOptions, Model, RetryOptions
from harnessc.runtime.providers.base import Context, ProviderRequest, ProviderRetry
from harnessc.runtime.support.timeouts import passed, until

__all__ = ["WALL_CLOCK_STOP", "checked_messages", "make_request", "short_json", "stream_reply"]

WALL_CLOCK_STOP = "stopped: the wall-clock budget ran out during the model reply"
_STATUS_FIELDS = ("headers", "metadata")
_NO_RETRY_OPTIONS = RetryOptions()  # the defaults (read, never changed)


async def make_request(agent: AgentParts, run: RunState) -> tuple[ProviderRequest, float | None]:
    """A model call's first half: the context and request hooks, then the request they
    made (and the wall-clock deadline). ``stream_reply`` is the second half.

    Two functions the step awaits in turn, so neither what the hooks saw nor a frame
    joining the two is kept while the reply streams (or waits for a request slot).
    """
    settings = agent.settings
    model = settings.model
    messages = list(agent.context.messages)
    # The hook events are made only when a hook listens: most steps of most agents have none.
    if agent.hooks.has("context"):
        messages = await _context_hooks(agent, run, messages)
    stream_options = settings.stream_options
    if agent.hooks.has("before_provider_request"):
        stream_options = await _request_hooks(agent, model, stream_options)
    assert agent.signal is not None
    if settings.pending_resources is not None:  # set during this turn's hooks: in it now
        await settings.apply_resources()
    system_prompt = run.system_prompt
    if system_prompt is None:
        system_prompt = await agent.system_prompt()
    request = ProviderRequest(
        model=model,
        context=Context(
            system_prompt=system_prompt,
            messages=messages,
            tools=settings.tool_specs(),
        ),
        stream_options=stream_options,
        thinking_level=settings.thinking_level,
        signal=agent.signal,
        session_id=agent.session.id,
        retry=agent.options.retry or _NO_RETRY_OPTIONS,
    )
    if agent.options.output is not None:  # the typed result: asked for in its mode
        from harnessc.runtime.agent.typed_result import shape

        shape(agent, request.context)
    observer = _Observer(agent)
    if agent.hooks.has("before_provider_payload"):
        request.on_payload = observer.payload
    request.on_response, request.on_retry = observer.response, observer.retry
    request.on_warning = observer.warning
    # The provider stops waiting at the same moment (connect, retries, reads).
    request.deadline = deadline = agent.budget.deadline()
    return request, deadline


async def _context_hooks(
    agent: AgentParts, run: RunState, messages: list[Message]
) -> list[Message]:
    """The messages the ``context`` hooks leave (each handler sees the one before's)."""
    context_event = ContextEvent(messages=messages, turn=run.turn)

    def take_context(result: Any) -> None:  # chained: the next handler sees the result
        result = coerce(result, ContextResult)
        if result.messages is not None:
            context_event.messages = checked_messages(result.messages)

    await agent.hooks.run("context", context_event, on_result=take_context)
    return context_event.messages


async def _request_hooks(
    agent: AgentParts, model: Model, stream_options: AgentHarnessStreamOptions
) -> AgentHarnessStreamOptions:
    """The stream options the ``before_provider_request`` hooks leave."""
    request_event = BeforeProviderRequestEvent(
        model=model, session_id=agent.session.id, stream_options=stream_options
    )

    def patch_options(result: Any) -> None:  # chained: the next handler sees the patch
        result = coerce(result, BeforeProviderRequestResult)
        if result.stream_options:
            request_event.stream_options = _patch_stream_options(
                request_event.stream_options, result.stream_options
            )

    await agent.hooks.run("before_provider_request", request_event, on_result=patch_options)
    return request_event.stream_options


class _Observer:
    """The request's callbacks into the harness: one small object, not three closures."""

    __slots__ = ("agent",)

    def __init__(self, agent: AgentParts) -> None:
        self.agent = agent

    def payload(self, payload: Any) -> Awaitable[Any]:
        return _on_payload(self.agent, payload)

    def response(self, status: int, headers: dict[str, str]) -> Awaitable[None]:
        return _on_response(self.agent, status, headers)

    def retry(self, retry: ProviderRetry) -> Awaitable[None]:
        return _on_retry(self.agent, retry)

    def warning(self, text: str) -> Awaitable[None]:
        return _on_warning(self.agent, text)


async def _on_payload(agent: AgentParts, payload: Any) -> Any:
    event = BeforeProviderPayloadEvent(model=agent.settings.model, payload=payload)

    def replace_payload(result: Any) -> None:  # chained: the next handler sees it
        if isinstance(result, BeforeProviderPayloadResult):
            if result.payload is not None:
                event.payload = result.payload
        elif isinstance(result, dict) and set(result) == {"payload"}:
            event.payload = result["payload"]
        else:
            event.payload = result

    await agent.hooks.run("before_provider_payload", event, on_result=replace_payload)
    return event.payload


async def _on_response(agent: AgentParts, status: int, headers: dict[str, str]) -> None:
    await agent.bus.emit(ProviderResponseEvent(status=status))
    if agent.hooks.has("after_provider_response"):
        await agent.hooks.run(
            "after_provider_response", AfterProviderResponseEvent(status=status, headers=headers)
        )


async def _on_warning(agent: AgentParts, text: str) -> None:
    await agent.bus.emit(NoticeEvent(source="provider", level="warning", message=text))


async def _on_retry(agent: AgentParts, retry: ProviderRetry) -> None:
    await agent.bus.emit(
        RetryEvent(
            attempt=retry.attempt,
            max_retries=retry.max_retries,
            delay_ms=retry.delay_ms,
            status=retry.status,
            error=retry.error,
        )
    )


def stream_reply(
    agent: AgentParts, request: ProviderRequest, deadline: float | None
) -> Awaitable[AssistantMessage]:
    """The streamed reply to ``request`` (recorded), or the error reply that ends it.

    With model fallback, a request that fails before any reply content streamed, with a
    kind the fallback names, goes to the next model instead (the failed attempt counts
    in the budget and is not recorded). Without it the step awaits the one coroutine
    that streams and records the reply: no frame of this function waits beside it.
    """
    if agent.options.fallback is None:
        return _stream_once(agent, request, deadline, None)
    return _stream_with_fallback(agent, request, deadline)


async def _stream_once(
    agent: AgentParts, request: ProviderRequest, deadline: float | None, outcome: _Outcome | None
) -> AssistantMessage:
    """One model's reply. Without ``outcome`` (no fallback) it is recorded here; with
    one, ``message_start`` waits for the reply's content (a request that fails before
    it can go to another model unseen), and ``outcome`` tells the caller whether it was
    emitted and the failure's kind; the caller records the reply it keeps.
    """
    defer_start = outcome is not None
    model = request.model
    try:
        provider = agent.provider_for(model)
    except KeyError as exc:
        unknown = AssistantMessage(
            api=model.api,
            provider=model.provider,
            model=model.id,
            stop_reason="error",
            error_message=str(exc.args[0]),
        )
        if outcome is None:
            await _record(agent, unknown, False)
        else:
            outcome.kind = "other"
        return unknown
    partial: AssistantMessage | None = None
    final: AssistantMessage | None = None
    started = False
    kind = ""
    bus = agent.bus
    stream = provider.stream(request)
    timed_out = False
    scope = until(deadline)
    try:
        async with scope:
            async for event in stream:
                etype = event.type
                if etype == "start":
                    partial = event.partial
                    if not defer_start:
                        started = True
                        await bus.emit(MessageStartEvent(message=partial))
                elif etype in ("done", "error"):
                    final = event.partial
                    kind = event.error_kind
                else:
                    partial = event.partial
                    if not started:
                        started = True
                        await bus.emit(MessageStartEvent(message=partial))
                    if bus.wanted:
                        await bus.emit(
                            MessageUpdateEvent(
                                delta_type=etype,
                                delta=event.delta,
                                content_index=event.content_index,
                                message=partial,
                            )
                        )
    except TimeoutError as exc:
        if scope.expired():  # the wall-clock budget ran out
            timed_out = True
        else:  # a timeout inside the provider is a failed call like any other
            final = _empty(request)
            final.stop_reason = "error"
            final.error_message = f"provider failed: {describe_exception(exc)}"
            kind = "timeout"
    except asyncio.CancelledError:
        message = partial or _empty(request)
        message.stop_reason = "aborted"
        message.error_message = "aborted"
        if not started:
            await bus.emit(MessageStartEvent(message=message))
        _unique_call_ids(message.tool_calls)
        await agent.append(message, started=True)
        raise
    except Exception as exc:
        final = _empty(request)
        final.stop_reason = "error"
        final.error_message = f"provider failed: {describe_exception(exc)}"
        kind = getattr(exc, "kind", "") or "other"
    finally:
        aclose = getattr(stream, "aclose", None)
        if aclose is not None:
            try:
                await aclose()
            except Exception:
                pass
    if not timed_out and final is not None and final.stop_reason == "error":
        # The provider ended the request at the deadline itself (or failed after it):
        # the same verdict as this stage's scope, read from the same moment.
        timed_out = passed(deadline)
    if timed_out:
        final = final or partial or _empty(request)
        final.stop_reason = "error"
        final.error_message = WALL_CLOCK_STOP
    if final is None:
        final = partial or _empty(request)
        final.stop_reason = "error"
        final.error_message = (
            final.error_message or "the provider stream ended without a final event"
        )
    if outcome is None:
        await _record(agent, final, started)
    else:
        outcome.started, outcome.kind = started, kind
    return final


async def _record(agent: AgentParts, final: AssistantMessage, started: bool) -> None:
    """Append the reply to the context (``message_start`` first if not emitted yet)."""
    if not started:
        await agent.bus.emit(MessageStartEvent(message=final))
    _unique_call_ids(final.tool_calls)  # before it is recorded: each result answers one call
    await agent.append(final, started=True)


async def _stream_with_fallback(
    agent: AgentParts, request: ProviderRequest, deadline: float | None
) -> AssistantMessage:
    fallback = agent.options.fallback
    assert fallback is not None
    settings = agent.settings
    chosen = settings.fallback_from or settings.model_key()
    picked = fallback.pick(chosen)
    if picked != settings.model_key():  # back to the chosen one, or past a cooling one
        _switch_model(agent, picked, chosen)
        _retarget(agent, request)
    while True:
        outcome = _Outcome()
        final = await _stream_once(agent, request, deadline, outcome)
        current = settings.model_key()
        following = (
            fallback.after(chosen, current)
            if final.stop_reason == "error"
            and not outcome.started
            and not final.context_overflow
            and final.error_message != WALL_CLOCK_STOP
            and fallback.applies_to(outcome.kind)
            else None
        )
        if following is None:
            break
        count_reply(agent, final)  # at the failed model's prices
        fallback.failed(current)
        _switch_model(agent, following, chosen)
        await agent.bus.emit(
            ModelFallbackEvent(
                from_model=current,
                to_model=following,
                reason=outcome.kind,
                error=final.error_message or "",
            )
        )
        _retarget(agent, request)  # the same deadline: one budget for all tries
    await _record(agent, final, outcome.started)
    return final


def _retarget(agent: AgentParts, request: ProviderRequest) -> None:
    """Send ``request`` to the model now in use, asking for a typed result in that
    model's own mode (native, tool or prompted)."""
    request.model = agent.settings.model
    if agent.options.output is not None:
        from harnessc.runtime.agent.typed_result import shape

        shape(agent, request.context)


class _Outcome:
    """What a fallback needs to know of one model's failed reply."""

    __slots__ = ("started", "kind")

    def __init__(self) -> None:
        self.started = False  # message_start was emitted
        self.kind = ""  # the failure's kind


def _switch_model(agent: AgentParts, key: str, chosen: str) -> None:
    """Use model ``key`` from the next request on (recorded in the session)."""
    settings = agent.settings
    settings.model = settings.models[key]
    settings.fallback_from = chosen if key != chosen else None
    agent.session.append_model_change(
        settings.model.provider or settings.model.api, settings.model.id
    )


def _empty(request: ProviderRequest) -> AssistantMessage:
    return AssistantMessage(
        api=request.model.api, provider=request.model.provider, model=request.model.id
    )


def _unique_call_ids(calls: list[ToolCall]) -> None:
    """Make empty or repeated call ids unique, in place (each result must find its call)."""
    seen: set[str] = set()
    for index, call in enumerate(calls):
        if not call.id or call.id in seen:
            base = call.id or "call"
            candidate = f"{base}_{index}"
            while candidate in seen:
                candidate += "_"
            call.id = candidate
        seen.add(call.id)


def _patch_stream_options(
    options: AgentHarnessStreamOptions, patch: dict[str, Any]
) -> AgentHarnessStreamOptions:
    if not isinstance(patch, dict):
        raise TypeError(f"stream_options must be a mapping, not {type(patch).__name__}")
    changes: dict[str, Any] = {}
    for key, value in patch.items():
        if key in _STATUS_FIELDS and isinstance(value, dict):
            merged = dict(getattr(options, key) or {})
            merged.update(value)
            changes[key] = merged
        elif key in AgentHarnessStreamOptions.__struct_fields__:
            changes[key] = value
    return replace(options, **changes)


def checked_messages(value: Any) -> list[Message]:
    """Messages a hook returned, or TypeError (a hook result never breaks the run)."""
    kinds = (UserMessage, AssistantMessage, ToolResultMessage, CustomMessage)
    if not isinstance(value, list | tuple) or not all(isinstance(m, kinds) for m in value):
        raise TypeError(f"messages must be a list of messages, not {short_json(value, 80)}")
    return list(value)


def short_json(value: Any, limit: int = 500) -> str:
    import json

    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."
