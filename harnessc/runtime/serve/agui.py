"""AG-UI: ``POST /agui`` takes a RunAgentInput and streams AG-UI events, encoded with
ag-ui-protocol's own encoder.

threadId names the session (a stored session id, or a thread this server started); the
front end's tools become external tools of the run. A call of one ends the run with
RUN_FINISHED listing the pending call ids; the next input on the thread answers it with
tool messages. A permission ask ends it with an interrupt per held call, answered by
``resume`` entries (resolved: run it, cancelled: refuse it).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from harnessc.runtime.core.messages import AssistantMessage, TextContent, UserMessage
from harnessc.runtime.serve.bodies import ApiError, read_json
from harnessc.runtime.serve.errors import guarded, serve_state
from harnessc.runtime.serve.native import check_prompt
from harnessc.runtime.serve.runs import PAUSED, Run, follow
from harnessc.runtime.serve.state import ServeState
from harnessc.runtime.tools.base import ExternalTool

__all__ = ["agui_routes"]


def agui_routes() -> list[Route]:
    return [Route("/agui", run_agent, methods=["POST"])]


@guarded
async def run_agent(request: Request) -> Response:
    from ag_ui.core import RunAgentInput
    from ag_ui.encoder import EventEncoder
    from pydantic import ValidationError

    state = serve_state(request)
    body = await read_json(request, state.config)
    try:
        given = RunAgentInput.model_validate(body)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()[:5]
        )
        raise ApiError(400, f"not a RunAgentInput: {problems}") from None
    run, first = await _start(state, given)
    encoder = EventEncoder(accept=request.headers.get("accept", ""))
    return StreamingResponse(
        _stream(run, first, given, encoder), media_type=encoder.get_content_type()
    )


async def _start(state: ServeState, given: Any) -> tuple[Run, int]:
    """The run this input starts or answers, and the number of its first event."""
    session_id: str | None = None
    latest: Run | None = None
    if state.runs.continues_sessions:
        session_id = state.threads.get(given.thread_id)
        if session_id is None and (
            given.thread_id in state.runs.by_session or _stored(state, given.thread_id)
        ):
            session_id = given.thread_id
        latest = state.runs.by_session.get(session_id) if session_id else None
        if latest is not None:  # as it stands now (a durable run's is in its database)
            latest = await state.runs.lookup(latest.id)
    elif given.thread_id in state.thread_runs:  # sessions in memory: each input is a run
        latest = await state.runs.lookup(state.thread_runs[given.thread_id])
    if latest is not None and latest.status in PAUSED:
        first = len(latest.events)
        return await _answer(state, latest, given), first
    prompt, history = _conversation(given)
    check_prompt(state, prompt)
    # the front end's tools, unless the agent has a tool of that name (its own wins)
    tools = [
        ExternalTool(t.name, t.description, dict(t.parameters or {}))
        for t in given.tools
        if t.name not in state.source.tool_names
    ]
    run = await state.runs.start(
        prompt,
        session_id,
        context=history if session_id is None else (),
        tools=tools,
    )
    if run.session_id:
        state.threads[given.thread_id] = run.session_id
    state.thread_runs[given.thread_id] = run.id
    return run, 0


async def _answer(state: ServeState, run: Run, given: Any) -> Run:
    if run.awaiting:
        pending = {c.id for c in run.pending}
        results = {
            m.tool_call_id: (
                {"error": m.error} if getattr(m, "error", None) else _content(m.content)
            )
            for m in given.messages
            if m.role == "tool" and m.tool_call_id in pending
        }
        await state.runs.resume(run, results=results)
        return run
    answers = {entry.interrupt_id: entry.status == "resolved" for entry in (given.resume or [])}
    if not answers:
        raise ApiError(
            409,
            f"the thread's run is paused ({run.reason}): answer its interrupts with resume",
            "conflict",
        )
    await state.runs.resume(run, approvals=answers)
    return run


def _stored(state: ServeState, session_id: str) -> bool:
    if not state.source.stored:
        return False
    try:
        state.source.open_session(session_id).close()
    except Exception:
        return False
    return True


def _content(content: Any) -> str:
    if isinstance(content, str):
        return content
    return json.dumps(content, default=str)


def _conversation(given: Any) -> tuple[str, list[Any]]:
    messages = list(given.messages)
    last_user = max((i for i, m in enumerate(messages) if m.role == "user"), default=-1)
    if last_user < 0:
        raise ApiError(400, "the input has no user message")
    history: list[Any] = []
    for message in messages[:last_user]:
        text = _text(message.content)
        if message.role == "user":
            history.append(UserMessage(content=text))
        elif message.role == "assistant" and text:
            history.append(AssistantMessage(content=[TextContent(text)]))
    prompt = _text(messages[last_user].content)
    if given.context:
        lines = "\n".join(f"- {c.description}: {c.value}" for c in given.context)
        prompt = f"{prompt}\n\nContext from the application:\n{lines}"
    return prompt, history


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(getattr(p, "text", "") or "" for p in content)
    return ""


async def _stream(run: Run, first: int, given: Any, encoder: Any) -> AsyncIterator[str]:
    from ag_ui import core

    yield encoder.encode(core.RunStartedEvent(thread_id=given.thread_id, run_id=given.run_id))
    if given.state:
        yield encoder.encode(core.StateSnapshotEvent(snapshot=given.state))
    translator = _Translator(run, core)
    # events of this request only (a resumed run keeps its older ones)
    async for item in follow(run, first):
        if item is None:
            yield ": keep-alive\n\n"
            continue
        index, encoded = item
        for out in translator.translate(encoded, index):
            yield encoder.encode(out)
    for out in translator.close():
        yield encoder.encode(out)
    if run.status == "error":
        yield encoder.encode(core.RunErrorEvent(message=run.reason or "the run failed"))
    elif run.status == "aborted":
        yield encoder.encode(core.RunErrorEvent(message=run.reason or "aborted", code="aborted"))
    elif run.status == "paused":
        interrupts = [
            core.Interrupt(id=c.id, reason="permission", message=run.reason, tool_call_id=c.id)
            for c in run.pending
        ] or [core.Interrupt(id=run.id, reason="paused", message=run.reason)]
        yield encoder.encode(
            core.RunFinishedEvent(
                thread_id=given.thread_id,
                run_id=given.run_id,
                outcome=core.RunFinishedInterruptOutcome(interrupts=interrupts),
            )
        )
    else:
        pending = [c.id for c in run.pending] if run.status == "awaiting_tool" else None
        yield encoder.encode(
            core.RunFinishedEvent(
                thread_id=given.thread_id,
                run_id=given.run_id,
                result=run.text if run.status == "done" else None,
                outcome=core.RunFinishedSuccessOutcome(pending_tool_call_ids=pending),
            )
        )


class _Translator:
    """The harness's events (as ``--json`` encodes them) to AG-UI events."""

    def __init__(self, run: Run, core: Any) -> None:
        self.run = run
        self.core = core
        self.open_text: str | None = None
        self.count = 0

    def translate(self, encoded: str, index: int) -> list[Any]:
        core = self.core
        event = json.loads(encoded)
        kind = event.get("type")
        out: list[Any] = []
        if kind == "message_update" and event.get("delta_type") == "text_delta":
            delta = event.get("delta") or ""
            if not delta:
                return out
            if self.open_text is None:
                self.count += 1
                self.open_text = f"{self.run.id}-m{self.count}"
                out.append(core.TextMessageStartEvent(message_id=self.open_text, role="assistant"))
            out.append(core.TextMessageContentEvent(message_id=self.open_text, delta=delta))
        elif kind == "message_end" and (event.get("message") or {}).get("role") == "assistant":
            parts = event["message"].get("content", [])
            text = "".join(p.get("text", "") for p in parts if p.get("type") == "text")
            if self.open_text is None and text:  # recorded whole (a durable run): no deltas
                self.count += 1
                self.open_text = f"{self.run.id}-m{self.count}"
                out.append(core.TextMessageStartEvent(message_id=self.open_text, role="assistant"))
                out.append(core.TextMessageContentEvent(message_id=self.open_text, delta=text))
            parent = self.open_text
            out.extend(self.close())
            for part in parts:
                if part.get("type") != "toolCall":
                    continue
                out.append(
                    core.ToolCallStartEvent(
                        tool_call_id=part["id"],
                        tool_call_name=part["name"],
                        parent_message_id=parent,
                    )
                )
                out.append(
                    core.ToolCallArgsEvent(
                        tool_call_id=part["id"], delta=json.dumps(part.get("arguments") or {})
                    )
                )
                out.append(core.ToolCallEndEvent(tool_call_id=part["id"]))
        elif kind == "tool_execution_end":
            result = event.get("result") or {}
            text = "".join(
                p.get("text", "") for p in result.get("content", []) if isinstance(p, dict)
            )
            out.append(
                core.ToolCallResultEvent(
                    message_id=f"{self.run.id}-r{index}",
                    tool_call_id=event.get("tool_call_id", ""),
                    content=text,
                    role="tool",
                )
            )
        return out

    def close(self) -> list[Any]:
        if self.open_text is None:
            return []
        message_id, self.open_text = self.open_text, None
        return [self.core.TextMessageEndEvent(message_id=message_id)]
