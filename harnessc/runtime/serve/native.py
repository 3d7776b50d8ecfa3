"""The native API: /healthz, runs (start, status, events, resume, abort) and sessions
(list, show, rewind, checkpoints), each a translation of the run-control layer
(``state.runs``) into JSON over HTTP."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from harnessc.runtime.core.messages import ImageContent
from harnessc.runtime.runs.answers import (
    DECISIONS,
    Answer,
    Decision,
    check_limits,
    split_approvals,
)
from harnessc.runtime.runs.control import RunControl, RunRequest
from harnessc.runtime.runs.errors import Conflict
from harnessc.runtime.runs.run import PAUSED, Run
from harnessc.runtime.serve.bodies import ApiError, optional, read_json, required
from harnessc.runtime.serve.errors import guarded, serve_state
from harnessc.runtime.serve.images import MAX_IMAGES, image
from harnessc.runtime.serve.state import ServeState
from harnessc.runtime.serve.streams import EventStream

__all__ = ["check_prompt", "event_stream", "native_routes", "parse_budget"]


async def healthz(request: Request) -> Response:
    state = serve_state(request)
    return JSONResponse(
        {"status": "ok", "agent": state.source.agent_name, "runs_working": state.runs.working}
    )


def check_prompt(state: ServeState, prompt: str) -> str:
    if not prompt.strip():
        raise ApiError(400, "'prompt' is empty", param="prompt")
    if len(prompt) > state.config.max_prompt_chars:
        raise ApiError(
            400, f"'prompt' is over {state.config.max_prompt_chars} characters", param="prompt"
        )
    return prompt


def _images(value: list[Any] | None) -> list[ImageContent]:
    if not value:
        return []
    if len(value) > MAX_IMAGES:
        raise ApiError(400, f"'images' holds more than {MAX_IMAGES} images", param="images")
    out = []
    for index, item in enumerate(value):
        where = f"images[{index}]"
        if not isinstance(item, dict):
            raise ApiError(400, f"{where} must be an object with 'data' and 'mime_type'")
        out.append(image(item.get("data"), item.get("mime_type"), where))
    return out


@guarded
async def start_run(request: Request) -> Response:
    state = serve_state(request)
    body = await read_json(request, state.config)
    prompt = check_prompt(state, required(body, "prompt", str))
    run = await state.runs.start(
        RunRequest(
            prompt,
            images=_images(optional(body, "images", list)),
            session=optional(body, "session_id", str),
            model=optional(body, "model", str),
            budget=parse_budget(optional(body, "budget", dict)),
        )
    )
    # a durable run has no session until a worker begins it (sessions in memory)
    return JSONResponse({"run_id": run.id, "session_id": run.session_id or None}, status_code=201)


@guarded
async def run_status(request: Request) -> Response:
    run = await serve_state(request).runs.get(request.path_params["run_id"])
    return JSONResponse(run.to_dict())


@guarded
async def run_events(request: Request) -> Response:
    runs = serve_state(request).runs
    run = await runs.get(request.path_params["run_id"])
    raw = request.headers.get("last-event-id") or request.query_params.get("after") or "0"
    try:
        after = int(raw)
    except ValueError:
        raise ApiError(400, f"Last-Event-ID must be an event number, not {raw[:40]!r}") from None
    if after < 0:
        raise ApiError(400, "Last-Event-ID must not be negative")
    return EventStream(
        event_stream(runs, run, after),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
    )


async def event_stream(runs: RunControl, run: Run, after: int) -> AsyncIterator[str]:
    """The run's events after number ``after``, then the new ones as they come, until the
    run ends or pauses. A client that goes away stops only its stream, never the run."""
    async for item in runs.events(run, after):
        if item is None:
            yield ": keep-alive\n\n"
        else:
            index, encoded = item
            yield f"id: {index + 1}\ndata: {encoded}\n\n"


def parse_budget(value: dict[str, Any] | None) -> dict[str, float]:
    """Budget limits by name (``{"turns": 10}``), raised over the run's own."""
    if value is None:
        return {}
    value = {k: v for k, v in value.items() if k != "soft_ratio"}
    try:
        return check_limits(value)
    except Conflict as exc:
        raise ApiError(400, f"'budget': {exc}", param="budget") from None


def parse_results(value: dict[str, Any] | None) -> dict[str, Any]:
    if value is None:
        return {}
    for call_id, result in value.items():
        if isinstance(result, dict):
            if not {"error", "content"} & set(result):
                raise ApiError(
                    400,
                    f'the result of {call_id} must be a string or {{"error": "..."}}',
                    param="results",
                )
        elif not isinstance(result, str):
            raise ApiError(
                400,
                f'the result of {call_id} must be a string or {{"error": "..."}}',
                param="results",
            )
    return value


def parse_approvals(value: dict[str, Any] | None) -> tuple[dict[str, Decision], dict[str, str]]:
    """call id -> true / false, "allow" / "deny" / "always", or ``{"decision": ...,
    "fingerprint": ...}`` (the fingerprint of the call as it was shown); the decisions
    and the fingerprints."""
    if value is None:
        return {}, {}
    for call_id, answer in value.items():
        if isinstance(answer, dict) and not isinstance(answer.get("fingerprint", ""), str):
            raise ApiError(400, f"the fingerprint of {call_id} must be a string", param="approvals")
    decisions, fingerprints = split_approvals(value)
    for call_id, answer in decisions.items():
        if not (isinstance(answer, str) and answer in DECISIONS):
            raise ApiError(
                400,
                f"the approval of {call_id} must be true or false (or allow, deny, always), "
                'or {"decision": ..., "fingerprint": ...}',
                param="approvals",
            )
    return decisions, fingerprints


@guarded
async def resume_run(request: Request) -> Response:
    state = serve_state(request)
    run = await state.runs.get(request.path_params["run_id"])
    body = await read_json(request, state.config)
    approvals, fingerprints = parse_approvals(optional(body, "approvals", dict))
    await state.runs.answer(
        run,
        Answer(
            results=parse_results(optional(body, "results", dict)),
            approvals=approvals,
            budget=parse_budget(optional(body, "budget", dict)),
            payload=optional(body, "payload", dict) or {},
            fingerprints=fingerprints,
        ),
    )
    return JSONResponse(
        {"run_id": run.id, "session_id": run.session_id or None, "status": run.status}
    )


@guarded
async def abort_run(request: Request) -> Response:
    state = serve_state(request)
    run = await state.runs.get(request.path_params["run_id"])
    await state.runs.abort(run, "aborted over HTTP")
    return JSONResponse({"run_id": run.id, "status": run.status, "reason": run.reason})


@guarded
async def list_sessions(request: Request) -> Response:
    state = serve_state(request)
    query = request.query_params.get("q")
    repo = state.source.repo
    if repo is None:
        if query:
            raise ApiError(400, "this agent keeps its sessions in memory: they cannot be searched")
        rows: list[dict[str, Any]] = []
        for sid in state.runs.known_sessions():
            latest = state.runs.latest(sid)
            rows.append(
                {
                    "id": sid,
                    "latest_run": latest.id if latest else None,
                    "status": latest.status if latest else None,
                }
            )
        return JSONResponse({"sessions": rows})
    from harnessc.runtime.runs.sessions import list_sessions as stored

    if query:
        if len(query) > 1000:
            raise ApiError(400, "'q' is over 1000 characters", param="q")
        hits = await asyncio.to_thread(_search, repo, query)
        return JSONResponse({"hits": hits})
    metas = await asyncio.to_thread(stored, repo, state.source.agent_name)
    rows = []
    for meta in metas:
        latest = state.runs.latest(meta.id)
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
    from harnessc.runtime.runs.errors import SetupError
    from harnessc.runtime.runs.sessions import search_repo
    from harnessc.runtime.session.index_support import SessionIndexError

    try:
        hits = search_repo(repo, query)
    except (SetupError, SessionIndexError) as exc:
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
    transcript = await state.runs.transcript(session_id)
    latest = state.runs.latest(session_id)
    return JSONResponse(
        {
            "id": session_id,
            "name": transcript.name,
            "messages": transcript.messages,
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
    latest = state.runs.latest(session_id)
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
    latest = state.runs.latest(session_id)
    if latest is not None and latest.working:
        raise ApiError(
            409, f"session {session_id} has a run working: rewind when it ends", "conflict"
        )
    held = getattr(latest, "harness", None)  # a plain run's, open while it waits
    if held is not None:
        yield held
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
