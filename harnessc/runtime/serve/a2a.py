"""A2A with the a2a-sdk's (1.x) server classes: the agent card at
``/.well-known/agent-card.json`` and the JSON-RPC endpoint at ``/a2a`` (``/a2a/`` too),
speaking A2A 1.0 and, through the sdk's compatibility layer on the same endpoint, 0.3
(the card lists an interface of each version, and carries 0.3's own fields).

A context id names a session; a task is one run. The final text comes back as an
artifact and the completing status message. A pause makes the task ``input-required``
(its status message names what is pending); the next message on that task answers it:
its text is the result of every pending external call, or, for calls a permission rule
held, "yes" / "approve" runs them and anything else refuses them (fail closed).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from harnessc.runtime.serve.runs import PAUSED, Run, UnknownRun
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

        async def execute(self, context: Any, event_queue: Any) -> None:
            from a2a.helpers import new_task_from_user_message, new_text_part
            from a2a.server.tasks import TaskUpdater

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
                if run is not None and run.status in PAUSED:
                    await _answer(state, run, text)
                else:
                    session_id = None
                    if state.runs.continues_sessions:
                        session_id = state.threads.get(task.context_id)
                    run = await state.runs.start(text, session_id)
                    if run.session_id:
                        state.threads[task.context_id] = run.session_id
                    self.tasks[task.id] = run.id
            except Exception as exc:
                from harnessc.runtime.serve.errors import api_error

                error = api_error(exc)
                await updater.failed(updater.new_agent_message([new_text_part(error.message)]))
                return
            await updater.start_work()
            await run.finished()
            if run.status == "done":
                await updater.add_artifact([new_text_part(run.text)], name="reply")
                await updater.complete(updater.new_agent_message([new_text_part(run.text)]))
            elif run.status in PAUSED:
                await updater.requires_input(
                    updater.new_agent_message([new_text_part(_describe(run))])
                )
            elif run.status == "aborted":
                await updater.cancel(updater.new_agent_message([new_text_part(run.reason)]))
            else:
                await updater.failed(
                    updater.new_agent_message([new_text_part(f"the agent failed: {run.reason}")])
                )

        async def cancel(self, context: Any, event_queue: Any) -> None:
            run_id = self.tasks.get(context.task_id or "")
            run = await _known(self.state, run_id)
            if run is not None:
                await self.state.runs.abort(run, "cancelled over A2A")

    return HarnessExecutor


async def _known(state: ServeState, run_id: str | None) -> Run | None:
    """The run a task started, as it stands now (None when it is not known)."""
    if not run_id:
        return None
    try:
        return await state.runs.lookup(run_id)
    except UnknownRun:
        return None


async def _answer(state: ServeState, run: Run, text: str) -> None:
    if run.awaiting:
        await state.runs.resume(run, results={c.id: text for c in run.pending})
        return
    allow = text.strip().lower().rstrip(".!") in _YES
    await state.runs.resume(run, approvals={c.id: allow for c in run.pending} or None)


def _describe(run: Run) -> str:
    if not run.pending:
        return f"paused: {run.reason}; send a message to continue"
    calls = "; ".join(
        f"{c.name}({json.dumps(c.arguments, ensure_ascii=False)}) id={c.id}" for c in run.pending
    )
    if run.awaiting:
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
