"""A2A with the a2a-sdk's (1.x) server classes: the agent card at
``/.well-known/agent-card.json`` and the JSON-RPC endpoint at ``/a2a`` (``/a2a/`` too),
speaking A2A 1.0 and, through the sdk's compatibility layer on the same endpoint, 0.3
(the card lists an interface of each version, and carries 0.3's own fields).

A context id names a session; a task is one run. The result comes back as an artifact
and the completing status message: a text part with the final text, or for an agent
with ``output:`` a data part with its typed value (``application/json``); the message's
metadata carries the run's usage (``harnessc.usage``). A pause makes the task
``input-required`` (its status message names what is pending); the next message on
that task answers it: its text is the result of every pending external call, or, for
calls a permission rule held, "yes" / "approve" runs them and anything else refuses
them (fail closed); for an MCP login its text is the address the browser was sent back
to (or "done"), for an MCP server's question a data part holds the form's fields
(accepted) or the text says decline or cancel; a data part holding the run API's answer
(``{"results"}``, ``{"approvals"}``, ``{"budget": {"turns": 20}}``) answers any pause;
an approval ``{"decision": "allow", "fingerprint": ...}`` carrying the fingerprint the
metadata's pause showed answers the call only while its arguments are those (else the
task stays ``input-required``, its message naming the change). ``tasks/cancel``
aborts the run, paused or working, and the task ends ``canceled``; a task that has
ended is not cancelable.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from harnessc.runtime.runs.answers import Answer
from harnessc.runtime.runs.errors import Conflict, UnknownRun
from harnessc.runtime.runs.run import Run
from harnessc.runtime.serve.state import ServeState

if TYPE_CHECKING:
    from starlette.routing import BaseRoute

__all__ = ["A2A_PATH", "CARD_CACHE_CONTROL", "PROTOCOL_VERSIONS", "LazyA2A", "a2a_routes"]

A2A_PATH = "/a2a"
# The card changes when the server restarts (its address, its skills): clients keep it
# a minute, then revalidate it against its ETag (a 304 when it is the same).
CARD_CACHE_CONTROL = "public, max-age=60"
PROTOCOL_VERSIONS = ("1.0", "0.3")
_YES = {"y", "yes", "approve", "approved", "allow", "ok"}


def agent_card(state: ServeState) -> Any:
    from a2a.types import a2a_pb2 as a2a

    source = state.source
    description = source.description or f"The {source.agent_name} agent (harnessc)."
    skills = [
        a2a.AgentSkill(
            id=source.agent_name, name=source.agent_name, description=description, tags=["agent"]
        )
    ]
    for name, text in source.skills:
        skills.append(a2a.AgentSkill(id=name, name=name, description=text or name, tags=["skill"]))
    taken = {skill.id for skill in skills}
    for name, text in source.subagents:  # the agents it hands work to (spec agents:)
        skill_id = name if name not in taken else f"agent:{name}"
        taken.add(skill_id)
        skills.append(
            a2a.AgentSkill(id=skill_id, name=name, description=text or name, tags=["sub-agent"])
        )
    security: dict[str, Any] = {}
    if state.config.token:
        bearer = a2a.HTTPAuthSecurityScheme(scheme="Bearer", description="the server's token")
        security = {
            "security_schemes": {"bearer": a2a.SecurityScheme(http_auth_security_scheme=bearer)},
            "security_requirements": [
                a2a.SecurityRequirement(schemes={"bearer": a2a.StringList()})
            ],
        }
    return a2a.AgentCard(
        **security,
        name=source.agent_name,
        description=description,
        version="1",
        supported_interfaces=[
            a2a.AgentInterface(
                url=f"{state.base_url}{A2A_PATH}",
                protocol_binding="JSONRPC",
                protocol_version=version,
            )
            for version in PROTOCOL_VERSIONS
        ],
        capabilities=a2a.AgentCapabilities(streaming=True),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=skills,
    )


def _executor_class() -> type:
    from a2a.server.agent_execution import AgentExecutor

    class HarnessExecutor(AgentExecutor):  # type: ignore[misc]
        """Runs the agent for a task: a new run, or the answer to its pause."""

        def __init__(self, state: ServeState) -> None:
            self.state = state
            self.tasks: dict[str, str] = {}  # task id -> run id
            self.cancelled: set[str] = set()  # runs tasks/cancel ended (it reports them)

        async def execute(self, context: Any, event_queue: Any) -> None:
            from a2a.helpers import new_task_from_user_message, new_text_part
            from a2a.server.tasks import TaskUpdater

            from harnessc.runtime.runs.control import RunRequest

            state = self.state
            task = context.current_task
            if task is None:
                task = new_task_from_user_message(context.message)
                await event_queue.enqueue_event(task)
            updater = TaskUpdater(event_queue, task.id, task.context_id)
            text = context.get_user_input()
            run_id = self.tasks.get(task.id)
            try:
                run = await _known(state, run_id)
                if run is not None and run.paused:
                    try:
                        await _answer(state, run, text, _data(context.message))
                    except Conflict as exc:  # the pause stands: its question is put again
                        message = f"{exc}\n{_describe(run)}"
                        await updater.requires_input(
                            updater.new_agent_message([new_text_part(message)], _metadata(run))
                        )
                        return
                else:
                    session_id = None
                    if state.runs.continues_sessions:
                        session_id = state.threads.get(task.context_id)
                    request = RunRequest(text, images=_images(context.message), session=session_id)
                    run = await state.runs.start(request)
                    if run.session_id:
                        state.threads[task.context_id] = run.session_id
                    self.tasks[task.id] = run.id
            except Exception as exc:
                from harnessc.runtime.serve.errors import api_error

                error = api_error(exc)
                await updater.failed(updater.new_agent_message([new_text_part(error.message)]))
                return
            await updater.start_work()
            await state.runs.settled(run)
            if run.id not in self.cancelled:
                await _report(updater, run)

        async def cancel(self, context: Any, event_queue: Any) -> None:
            from a2a.helpers import new_text_part
            from a2a.server.tasks import TaskUpdater
            from a2a.utils.errors import TaskNotCancelableError

            run = await _known(self.state, self.tasks.get(context.task_id or ""))
            if run is None:
                raise TaskNotCancelableError(message="the task has no run to cancel")
            self.cancelled.add(run.id)
            try:
                await self.state.runs.abort(run, "cancelled over A2A")
            except Conflict as exc:
                self.cancelled.discard(run.id)
                raise TaskNotCancelableError(message=str(exc)) from None
            updater = TaskUpdater(event_queue, context.task_id, context.context_id)
            message = updater.new_agent_message([new_text_part(run.reason)], _metadata(run))
            await updater.cancel(message)

    return HarnessExecutor


async def _report(updater: Any, run: Run) -> None:
    """The task's status (and artifact) for how the run stands."""
    from a2a.helpers import new_data_part, new_text_part

    metadata = _metadata(run)
    if run.status == "done":
        if run.output is not None:
            parts = [new_data_part(run.output, "application/json")]
        else:
            parts = [new_text_part(run.text)]
        await updater.add_artifact(parts, name="reply", metadata=metadata)
        await updater.complete(updater.new_agent_message(parts, metadata))
    elif run.paused:
        await updater.requires_input(
            updater.new_agent_message([new_text_part(_describe(run))], metadata)
        )
    elif run.status == "aborted":
        await updater.cancel(updater.new_agent_message([new_text_part(run.reason)], metadata))
    else:
        await updater.failed(
            updater.new_agent_message([new_text_part(f"the agent failed: {run.reason}")], metadata)
        )


def _metadata(run: Run) -> dict[str, Any]:
    """What a task's messages carry of their run: its id and usage, and what a paused
    run waits for (its ``Pause``: a calling harnessc agent holds the same calls)."""
    out: dict[str, Any] = {"run_id": run.id, "usage": run.usage.to_dict()}
    if run.paused and run.pause is not None:
        out["pause"] = run.pause.to_dict()
    return {"harnessc": out}


async def _known(state: ServeState, run_id: str | None) -> Run | None:
    """The run a task started, as it stands now (None when it is not known)."""
    if not run_id:
        return None
    try:
        return await state.runs.get(run_id)
    except UnknownRun:
        return None


def _data(message: Any) -> dict[str, Any] | None:
    """The first data part of a message that is an object (a structured answer)."""
    from google.protobuf.json_format import MessageToDict

    for part in getattr(message, "parts", []) or []:
        if part.HasField("data"):
            value = MessageToDict(part.data)
            if isinstance(value, dict):
                return value
    return None


def _images(message: Any) -> list[Any]:
    """The images of a message: parts with raw bytes and an image media type."""
    import base64

    from harnessc.runtime.core.messages import ImageContent

    images = []
    for part in getattr(message, "parts", []) or []:
        if part.raw and part.media_type.startswith("image/"):
            images.append(ImageContent(base64.b64encode(part.raw).decode("ascii"), part.media_type))
    return images


_ANSWER_KEYS = {"results", "approvals", "budget", "payload"}


def _mcp_answer(pause: Any, text: str, data: dict[str, Any] | None) -> Answer:
    """The answer to an MCP login (the text: the address the browser was sent back to,
    or done) or question (a data part: the form's fields, accepted; the text decline or
    cancel; other text accepts a URL question)."""
    if pause.kind == "mcp_login":
        return Answer(payload={"redirect": text.strip()})
    word = text.strip().lower().rstrip(".!")
    if data is not None:
        return Answer(payload={"action": "accept", "content": data})
    if word in ("decline", "no", "cancel"):
        return Answer(payload={"action": "cancel" if word == "cancel" else "decline"})
    return Answer(payload={"action": "accept"})


async def _answer(state: ServeState, run: Run, text: str, data: dict[str, Any] | None) -> None:
    pause = run.pause
    assert pause is not None
    if data is not None and _ANSWER_KEYS & set(data):
        answer = Answer.from_dict(data)
    elif pause.kind in ("mcp_login", "mcp_elicitation"):
        answer = _mcp_answer(pause, text, data)
    elif data is not None:
        answer = Answer.from_dict(data)
    elif pause.awaiting_tool:
        answer = Answer(results={c.id: text for c in pause.calls})
    else:
        allow = text.strip().lower().rstrip(".!") in _YES
        answer = Answer(approvals={c.id: "allow" if allow else "deny" for c in pause.held})
    await state.runs.answer(run, answer)


def _describe(run: Run) -> str:
    pause = run.pause
    if pause is not None and pause.kind == "mcp_login":
        return f"{run.reason}. Reply with that address (or done once logged in elsewhere)"
    if pause is not None and pause.kind == "mcp_elicitation":
        schema = pause.payload.get("schema")
        form = f" The form: {json.dumps(schema, ensure_ascii=False)}." if schema else ""
        return (
            f"{run.reason}.{form} Reply with a data part holding the answer's fields "
            "(accept), or with decline or cancel"
        )
    if pause is None or not pause.calls:
        return f"paused: {run.reason}; send a message to continue"
    calls = "; ".join(
        f"{c.name}({json.dumps(c.arguments, ensure_ascii=False)}) id={c.id}" for c in pause.calls
    )
    if pause.awaiting_tool:
        return f"waiting for the result of {calls}: reply with it"
    return f"{run.reason}: {calls}; reply yes to run it, anything else refuses it"


def a2a_routes(state: ServeState) -> list[BaseRoute]:
    from a2a.server.request_handlers import DefaultRequestHandler
    from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
    from a2a.server.tasks import InMemoryTaskStore

    card = agent_card(state)

    async def current_card(_: Any) -> Any:
        # the address is known once the server listens (--port 0 picks one)
        return agent_card(state)

    handler = DefaultRequestHandler(
        agent_executor=_executor_class()(state),
        task_store=InMemoryTaskStore(),
        agent_card=card,
    )
    routes: list[BaseRoute] = [
        *create_agent_card_routes(
            card, card_modifier=current_card, cache_control=CARD_CACHE_CONTROL
        ),
        *create_jsonrpc_routes(handler, A2A_PATH, enable_v0_3_compat=True),
    ]
    return routes


class LazyA2A:
    """The sdk's routes as one ASGI app, built on the first A2A request (importing the
    sdk takes a second or more; a server that never sees an A2A client never pays it)."""

    def __init__(self, state: ServeState) -> None:
        self.state = state
        self.app: Any = None

    def routes(self) -> list[BaseRoute]:
        from starlette.routing import Route

        return [
            Route("/.well-known/agent-card.json", self, methods=["GET", "HEAD"]),
            Route(A2A_PATH, self, methods=["POST"]),
            # the card's URL with a slash (clients join paths so): the same endpoint,
            # not a redirect (a 307 has no JSON-RPC body)
            Route(f"{A2A_PATH}/", self, methods=["POST"]),
        ]

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if self.app is None:
            from starlette.applications import Starlette

            self.app = Starlette(routes=a2a_routes(self.state))
        if scope.get("path") == f"{A2A_PATH}/":
            scope = {**scope, "path": A2A_PATH, "raw_path": A2A_PATH.encode()}
        await self.app(scope, receive, send)
