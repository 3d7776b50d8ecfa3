"""The native API: /healthz, runs (start, status, events, resume, abort) and sessions
(list, show, rewind, checkpoints)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from harnessc.runtime.core.budget import BUDGET_LIMITS, Budget
from harnessc.runtime.serve.bodies import ApiError, optional, read_json, required
from harnessc.runtime.serve.errors import guarded, serve_state
from harnessc.runtime.serve.runs import PAUSED, Run, follow
from harnessc.runtime.serve.state import ServeState

__all__ = ["event_stream", "native_routes"]


async def healthz(request: Request) -> Response:
    state = serve_state(request)
    return JSONResponse(
        {"status": "ok", "agent": state.source.agent_name, "runs_working": state.runs.working}
    )


def check_prompt(state: ServeState, prompt: str) -> str:
    if not prompt.strip():
        raise ApiError(400, "'prompt' is empty")
    if len(prompt) > state.config.max_prompt_chars:
        raise ApiError(400, f"'prompt' is over {state.config.max_prompt_chars} characters")
    return prompt


@guarded
async def start_run(request: Request) -> Response:
    state = serve_state(request)
    body = await read_json(request, state.config)
    prompt = check_prompt(state, required(body, "prompt", str))
    session_id = optional(body, "session_id", str)
    run = await state.runs.start(prompt, session_id)
    # a durable run has no session until a worker begins it
    return JSONResponse({"run_id": run.id, "session_id": run.session_id or None}, status_code=201)


@guarded
async def run_status(request: Request) -> Response:
    run = await serve_state(request).runs.lookup(request.path_params["run_id"])
    return JSONResponse(run.to_dict())


@guarded
async def run_events(request: Request) -> Response:
    run = await serve_state(request).runs.lookup(request.path_params["run_id"])
    raw = request.headers.get("last-event-id") or request.query_params.get("after") or "0"
    try:
        after = int(raw)
    except ValueError:
        raise ApiError(400, f"Last-Event-ID must be an event number, not {raw[:40]!r}") from None
    if after < 0:
        raise ApiError(400, "Last-Event-ID must not be negative")
    return StreamingResponse(
        event_stream(run, after),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
    )


async def event_stream(run: Run, after: int) -> AsyncIterator[str]:
    """The run's events after number ``after``, then the new ones as they come, until the
    run ends or pauses. A client that goes away stops only its stream, never the run."""
    async for item in follow(run, after):
        if item is None:
            yield ": keep-alive\n\n"
        else:
            index, encoded = item
            yield f"id: {index + 1}\ndata: {encoded}\n\n"


def parse_budget(value: dict[str, Any] | None) -> Budget | None:
    if value is None:
        return None
    unknown = sorted(set(value) - set(BUDGET_LIMITS) - {"soft_ratio"})
    if unknown:
        raise ApiError(
            400,
            f"'budget' has unknown limits {', '.join(unknown)} (known: {', '.join(BUDGET_LIMITS)})",
        )
    for key, number in value.items():
        if number is not None and (isinstance(number, bool) or not isinstance(number, int | float)):
            raise ApiError(400, f"'budget.{key}' must be a number")
    try:
        return Budget(**value)
    except (TypeError, ValueError) as exc:
        raise ApiError(400, f"'budget': {exc}") from None


def parse_results(value: dict[str, Any] | None) -> dict[str, Any] | None:
    if value is None:
        return None
    for call_id, result in value.items():
        if isinstance(result, dict):
            if not {"error", "content"} & set(result):
                raise ApiError(
                    400, f'the result of {call_id} must be a string or {{"error": "..."}}'
                )
        elif not isinstance(result, str):
            raise ApiError(400, f'the result of {call_id} must be a string or {{"error": "..."}}')
    return value


def parse_approvals(value: dict[str, Any] | None) -> dict[str, bool] | None:
    if value is None:
        return None
    for call_id, allow in value.items():
        if not isinstance(allow, bool):
            raise ApiError(400, f"the approval of {call_id} must be true or false")
    return value


@guarded
async def resume_run(request: Request) -> Response:
    state = serve_state(request)
    run = await state.runs.lookup(request.path_params["run_id"])
    body = await read_json(request, state.config)
    await state.runs.resume(
        run,
        results=parse_results(optional(body, "results", dict)),
        approvals=parse_approvals(optional(body, "approvals", dict)),
        budget=parse_budget(optional(body, "budget", dict)),
    )
    return JSONResponse(
        {"run_id": run.id, "session_id": run.session_id or None, "status": run.status}
    )


@guarded
async def abort_run(request: Request) -> Response:
    state = serve_state(request)
    run = await state.runs.lookup(request.path_params["run_id"])
    await state.runs.abort(run)
    return JSONResponse({"run_id": run.id, "status": run.status})


@guarded
async def list_sessions(request: Request) -> Response:
    state = serve_state(request)
    query = request.query_params.get("q")
    repo = state.source.repo
    if repo is None:
        if query:
            raise ApiError(400, "this agent keeps its sessions in memory: they cannot be searched")
        rows: list[dict[str, Any]] = [
            {"id": sid, "latest_run": run.id, "status": run.status}
            for sid, run in state.runs.by_session.items()
        ]
        return JSONResponse({"sessions": rows})
    from harnessc.runtime.cli.sessions import list_sessions as stored

    if query:
        if len(query) > 1000:
            raise ApiError(400, "'q' is over 1000 characters")
        hits = await asyncio.to_thread(_search, repo, query)
        return JSONResponse({"hits": hits})
    metas = await asyncio.to_thread(stored, repo, state.source.agent_name)
    rows = []
    for meta in metas:
        latest = state.runs.by_session.get(meta.id)
        rows.append(
            {
                "id": meta.id,
                "name": meta.name,
                "first_prompt": meta.first_prompt,
                "created": meta.timestamp,
                "modified": meta.modified,
                "parent_session": meta.parent_session,
                "latest_run": latest.id if latest else None,
                "status": latest.status if latest else None,
            }
        )
    return JSONResponse({"sessions": rows})


def _search(repo: Any, query: str) -> list[dict[str, Any]]:
    from harnessc.runtime.cli.args import UsageError
    from harnessc.runtime.cli.sessions import search_repo
    from harnessc.runtime.session.index_support import SessionIndexError

    try:
        hits = search_repo(repo, query)
    except (UsageError, SessionIndexError) as exc:
        raise ApiError(400, f"cannot search: {exc}") from None
    return [
        {
            "session_id": h.session_id,
            "entry_id": h.entry_id,
            "role": h.role,
            "snippet": h.snippet,
            "score": h.score,
        }
        for h in hits
    ]


@guarded
async def show_session(request: Request) -> Response:
    state = serve_state(request)
    session_id = request.path_params["session_id"]
    latest = state.runs.by_session.get(session_id)
    if latest is not None and latest.harness is not None:
        session = latest.harness.session
        close = False
    else:
        session = state.source.open_session(session_id)
        close = True
    try:
        messages = [m.to_dict() for m in session.context().messages]
        name = session.name
    finally:
        if close:
            session.close()
    return JSONResponse(
        {
            "id": session_id,
            "name": name,
            "messages": messages,
            "latest_run": latest.to_dict() if latest is not None else None,
        }
    )


@guarded
async def rewind_session(request: Request) -> Response:
    """POST /v1/sessions/{id}/rewind: the session (and its files) back to an entry,
    ``{"entry_id", "mode": "both" | "conversation" | "files", "force", "dry_run"}``; the
    answer holds the plan (every change, the conflicts kept unless ``force``, the diff)
    and what was done. 409 while a run of the session is working, and for a move of the
    conversation while one is paused (its answer would continue on the old branch)."""
    from harnessc.runtime.checkpoints.rewind import RewindError, RewindRequest

    state = serve_state(request)
    session_id = request.path_params["session_id"]
    try:
        asked = RewindRequest.from_json(await read_json(request, state.config))
    except ValueError as exc:
        raise ApiError(400, str(exc)) from None
    latest = state.runs.by_session.get(session_id)
    if asked.mode != "files" and latest is not None and latest.status in PAUSED:
        raise ApiError(
            409,
            f"session {session_id} has a paused run ({latest.id}): answer or abort it "
            "first, or rewind with mode 'files'",
            "conflict",
        )
    async with _idle_harness(state, session_id) as harness:
        try:
            report = await harness.rewind(
                asked.entry_id, mode=asked.mode, force=asked.force, dry_run=asked.dry_run
            )
        except RewindError as exc:
            raise ApiError(400, str(exc)) from None
        return JSONResponse({"session_id": session_id, **report.to_dict()})


@guarded
async def session_checkpoints(request: Request) -> Response:
    """GET /v1/sessions/{id}/checkpoints: recent checkpoints and what each would change."""
    state = serve_state(request)
    async with _idle_harness(state, request.path_params["session_id"]) as harness:
        points = await asyncio.to_thread(harness.rewind_points, 20)
        return JSONResponse({"checkpoints": [p.to_dict() for p in points]})


@contextlib.asynccontextmanager
async def _idle_harness(state: ServeState, session_id: str) -> AsyncIterator[Any]:
    """The harness of the session's latest run when it is open and idle, else one built
    on the stored session for the request (closed after it)."""
    latest = state.runs.by_session.get(session_id)
    if latest is not None and latest.working:
        raise ApiError(
            409, f"session {session_id} has a run working: rewind when it ends", "conflict"
        )
    if latest is not None and latest.harness is not None:
        yield latest.harness
        return
    session = await asyncio.to_thread(state.source.open_session, session_id)
    harness = state.source.harness(session)
    try:
        yield harness
    finally:
        await harness.close()


def native_routes() -> list[Route]:
    return [
        Route("/healthz", healthz, methods=["GET"]),
        Route("/v1/runs", start_run, methods=["POST"]),
        Route("/v1/runs/{run_id}", run_status, methods=["GET"]),
        Route("/v1/runs/{run_id}/events", run_events, methods=["GET"]),
        Route("/v1/runs/{run_id}/resume", resume_run, methods=["POST"]),
        Route("/v1/runs/{run_id}/abort", abort_run, methods=["POST"]),
        Route("/v1/sessions", list_sessions, methods=["GET"]),
        Route("/v1/sessions/{session_id}", show_session, methods=["GET"]),
        Route("/v1/sessions/{session_id}/rewind", rewind_session, methods=["POST"]),
        Route("/v1/sessions/{session_id}/checkpoints", session_checkpoints, methods=["GET"]),
    ]
