"""The agent served as an MCP server, with the mcp SDK's server side: ``--serve --mcp``
(``harnessc serve NAME --mcp``) over stdin and stdout, and ``/mcp`` (streamable HTTP)
on the served app, behind the same token as every other endpoint.

The agent is one tool, named after it: its input is the prompt (``session_id`` goes on
in a session an earlier call started), its output the final text, or for an agent with
``output:`` the typed value as structured content (``outputSchema`` is the value's
schema; a value that is not an object travels as ``{"result": value}``). The result's
``_meta["harnessc"]`` names the run, its session and what it used. Each event of the run
is a progress notification when the client asked for progress.

A pause of the run (a permission ``ask``, a budget limit, an external tool's result, a
hook, an MCP server's question) is a question to the client's user, put as a form
elicitation when the client supports elicitation (an MCP server's question with that
server's own schema; an MCP login, and a server's URL question, as URL-mode elicitation
when the client takes it: accepted once the browser came back): on a 2026-07-28 connection an ``input_required`` result (the
run's id is its request state), on an older one an ``elicitation/create`` request; the
answer resumes the run (``decline`` refuses held calls, ``cancel`` aborts the run). A
client without elicitation gets an error result naming the paused run and how to answer
it: the same tool called again with ``run_id`` and ``answer`` (the native API's answer:
``{"approvals": {...}}``, ``{"results": {...}}``, ``{"budget": {...}}``). When the
client cancels the call, the run is aborted.
"""

from __future__ import annotations

import contextlib
import json
import re
from typing import TYPE_CHECKING, Any

from harnessc.runtime.runs.answers import Answer
from harnessc.runtime.runs.control import RunRequest
from harnessc.runtime.runs.errors import RunError
from harnessc.runtime.runs.pauses import Pause
from harnessc.runtime.runs.run import Run
from harnessc.runtime.serve.state import ServeState

if TYPE_CHECKING:
    from starlette.routing import BaseRoute

__all__ = [
    "MCP_PATH",
    "LazyMcp",
    "McpDoor",
    "answer_from_form",
    "pause_form",
    "pause_url",
    "serve_stdio",
    "tool_name",
]

MCP_PATH = "/mcp"
PAUSE_KEY = "pause"  # the key of a pause's question among an input_required's requests
_NAME = re.compile(r"[^A-Za-z0-9_.-]+")


def tool_name(agent_name: str) -> str:
    """The agent's tool name (MCP tool names: letters, digits, ``_-.``, 1-128)."""
    return (_NAME.sub("_", agent_name).strip("_") or "agent")[:128]


def _input_schema() -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "prompt": {"type": "string", "description": "The task for the agent."},
            "session_id": {
                "type": "string",
                "description": "Go on in this session (an earlier result's session_id).",
            },
            "run_id": {
                "type": "string",
                "description": "A paused run to answer (with answer), as a paused result names it.",
            },
            "answer": {
                "type": "object",
                "description": 'The answer to the paused run: {"approvals": {"CALL_ID": '
                '"allow"}}, {"results": {"CALL_ID": "text"}} or {"budget": {"turns": 40}}.',
            },
        },
    }


# -- a pause as a form, the form's answer as an Answer ------------------------------------


def _call_text(pause: Pause) -> str:
    return "; ".join(
        f"{c.name}({json.dumps(c.arguments, ensure_ascii=False)})"
        + (f" in {c.path}" if c.path else "")
        for c in pause.calls
    )


def pause_form(run: Run) -> tuple[str, dict[str, Any]]:
    """The question a paused run puts to the client's user: (message, requested schema,
    a flat object of primitive properties as form elicitation takes it)."""
    pause = run.pause
    assert pause is not None
    if pause.kind == "approval":
        calls = "; ".join(
            f"{c.name}({json.dumps(c.arguments, ensure_ascii=False)})" for c in pause.held
        )
        message = f"The agent asks to run {calls} ({pause.reason}). Allow it?"
        schema = {
            "decision": {
                "type": "string",
                "enum": ["allow", "deny", "always"],
                "description": "allow: this once; always: for the rest of the session",
            }
        }
        return message, {"type": "object", "properties": schema, "required": ["decision"]}
    if pause.kind == "tool_results":
        properties = {
            c.id: {"type": "string", "description": f"the result of {c.name}({_args(c)})"}
            for c in pause.calls
        }
        message = f"The agent waits for the result of {_call_text(pause)}."
        return message, {"type": "object", "properties": properties, "required": list(properties)}
    if pause.kind == "budget" and pause.budget is not None:
        use = pause.budget
        message = (
            f"The agent reached its {use.limit} limit ({use.used:g} used of "
            f"{use.allowed if use.allowed is not None else 'no limit'}). Raise it to go on?"
        )
        schema = {"raise_to": {"type": "number", "description": f"the new {use.limit} limit"}}
        return message, {"type": "object", "properties": schema, "required": ["raise_to"]}
    if pause.kind == "mcp_login":
        schema = {
            "redirect": {
                "type": "string",
                "description": "the address the browser was sent back to (leave it empty "
                "when it came back to the agent's machine)",
            }
        }
        return pause.reason, {"type": "object", "properties": schema}
    if pause.kind == "mcp_elicitation":
        server = pause.payload.get("server", "?")
        message = f"mcp server {server!r} asks: {pause.payload.get('message', pause.reason)}"
        asked = pause.payload.get("schema")
        if pause.payload.get("mode") == "form" and isinstance(asked, dict):
            return message, asked
        return pause.reason, {"type": "object", "properties": {}}
    message = f"The agent paused ({pause.reason or pause.kind}). Go on?"
    schema = {"go_on": {"type": "boolean", "description": "go on with the run"}}
    return message, {"type": "object", "properties": schema, "required": ["go_on"]}


def pause_url(run: Run) -> tuple[str, str, str] | None:
    """A pause put as URL-mode elicitation: (message, URL, elicitation id) of an MCP
    login (the authorization URL) or of an MCP server's URL question; None for others."""
    pause = run.pause
    if pause is None or pause.kind not in ("mcp_login", "mcp_elicitation"):
        return None
    url = pause.payload.get("url")
    if not isinstance(url, str) or not url:
        return None
    if pause.kind == "mcp_elicitation" and pause.payload.get("mode") != "url":
        return None
    call_id = str(pause.payload.get("call_id") or "")
    return pause.reason, url, f"{run.id}:{call_id}"


def _args(call: Any) -> str:
    return json.dumps(call.arguments, ensure_ascii=False)


def answer_from_form(pause: Pause, action: str, content: dict[str, Any] | None) -> Answer | None:
    """The answer a form's reply gives the pause; None: end the run (``cancel``, or a
    refusal where nothing else fits). ``decline`` refuses held calls and gives an external
    call an error result (fail closed)."""
    content = content or {}
    if pause.kind == "mcp_elicitation":  # the server's own question: its answer, whatever it is
        given = content if action == "accept" and content else None
        return Answer(payload={"action": action, "content": given})
    if action == "cancel":
        return None
    accepted = action == "accept"
    if pause.kind == "mcp_login":
        if not accepted:
            return None
        redirect = content.get("redirect")
        back = redirect.strip() if isinstance(redirect, str) else ""
        return Answer(payload={"redirect": back or "done"})
    if pause.kind == "approval":
        decision = str(content.get("decision", "deny")) if accepted else "deny"
        if decision not in ("allow", "deny", "always"):
            decision = "deny"
        return Answer(approvals={c.id: decision for c in pause.held})  # type: ignore[misc]
    if pause.kind == "tool_results":
        refused = {"error": "the user declined to give a result"}
        return Answer(
            results={
                c.id: str(content[c.id]) if accepted and c.id in content else refused
                for c in pause.calls
            }
        )
    if pause.kind == "budget" and pause.budget is not None:
        value = content.get("raise_to")
        if not accepted or isinstance(value, bool) or not isinstance(value, int | float):
            return None
        return Answer(budget={pause.budget.limit: value})
    if accepted and content.get("go_on") is True:
        return Answer()
    return None


def _resume_hint(tool: str, run: Run) -> str:
    pause = run.pause
    assert pause is not None
    if pause.kind == "approval":
        example: dict[str, Any] = {"approvals": {c.id: "allow" for c in pause.held}}
    elif pause.kind == "tool_results":
        example = {"results": {c.id: "..." for c in pause.calls}}
    elif pause.kind == "budget" and pause.budget is not None:
        example = {"budget": {pause.budget.limit: "N"}}
    elif pause.kind == "mcp_login":
        example = {"payload": {"redirect": "<the address the browser was sent back to>"}}
    elif pause.kind == "mcp_elicitation":
        example = {"payload": {"action": "accept", "content": {}}}
    else:
        example = {}
    call = json.dumps({"run_id": run.id, "answer": example}, ensure_ascii=False)
    what = _call_text(pause)
    return (
        f"The run {run.id} paused ({pause.kind}: {pause.reason}"
        + (f"; {what}" if what else "")
        + f"). This client takes no elicitation: answer it by calling {tool} with {call}."
    )


# -- the door ------------------------------------------------------------------------------


class McpDoor:
    """The mcp SDK's lowlevel ``Server`` serving one agent over the run-control layer."""

    def __init__(self, state: ServeState) -> None:
        self.state = state
        self.tool = tool_name(state.source.agent_name)
        self.output: Any = None  # the agent's OutputConfig (a typed agent), set by prepare()
        self.server = self._server()

    def prepare(self) -> None:
        """Read the agent's typed output (its options, built once without a harness)."""
        from harnessc.runtime.session.entries import SessionHeader
        from harnessc.runtime.session.session import Session

        source = self.state.source
        session = Session(SessionHeader.new(cwd=source.cwd, metadata={}))
        self.output = source.options(session).output

    def _server(self) -> Any:
        from mcp.server.lowlevel import Server
        from mcp.server.request_state import RequestStateBoundary, RequestStateSecurity

        source = self.state.source
        server: Any = Server(
            source.agent_name,
            version="1",
            instructions=source.description or None,
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
        )
        # a 2026-07-28 client echoes the run id as request state: sealed, checked on return
        server.middleware.append(
            RequestStateBoundary(RequestStateSecurity.ephemeral(), default_audience=self.tool)
        )
        return server

    def tool_definition(self) -> Any:
        import mcp_types as types

        source = self.state.source
        description = source.description or f"The {source.agent_name} agent (harnessc)."
        output_schema = self.output.object_schema() if self.output is not None else None
        return types.Tool(
            name=self.tool,
            description=description,
            input_schema=_input_schema(),
            output_schema=output_schema,
        )

    async def _list_tools(self, ctx: Any, params: Any) -> Any:
        import mcp_types as types

        return types.ListToolsResult(tools=[self.tool_definition()])

    async def _call_tool(self, ctx: Any, params: Any) -> Any:
        import anyio

        if params.name != self.tool:
            return _error_result(f"no tool {params.name!r}; this server has {self.tool!r}")
        args = params.arguments or {}
        runs = self.state.runs
        run: Run | None = None
        try:
            if params.request_state:  # a 2026-07-28 client answers the question we put
                run = await runs.get(params.request_state)
                reply = (params.input_responses or {}).get(PAUSE_KEY)
                if not await self._answer_reply(run, reply):
                    return self._result(run)
            elif args.get("run_id"):
                run = await runs.get(str(args["run_id"]))
                answer = args.get("answer")
                if not isinstance(answer, dict):
                    return _error_result("'answer' must be an object (see the paused result)")
                if run.pause is None:
                    return _error_result(f"run {run.id} is {run.status}, not paused")
                await runs.answer(run, Answer.from_dict(answer))
            else:
                prompt = args.get("prompt")
                if not isinstance(prompt, str) or not prompt.strip():
                    return _error_result("'prompt' is required: the task for the agent")
                if len(prompt) > self.state.config.max_prompt_chars:
                    limit = self.state.config.max_prompt_chars
                    return _error_result(f"'prompt' is over {limit} characters")
                session = args.get("session_id")
                if session is not None and not isinstance(session, str):
                    return _error_result("'session_id' must be a string")
                run = await runs.start(RunRequest(prompt, session=session))
            while True:
                await self._follow(ctx, run)
                if not run.paused:
                    return self._result(run)
                asked = await self._ask(ctx, run)
                if asked is not None:
                    return asked
        except RunError as exc:
            return _error_result(str(exc))
        except anyio.get_cancelled_exc_class():
            if run is not None and (run.working or run.paused):
                with anyio.CancelScope(shield=True):
                    with contextlib.suppress(RunError):
                        await runs.abort(run, "cancelled by the MCP client")
            raise

    async def _follow(self, ctx: Any, run: Run) -> None:
        """Until the run ends or pauses, each event a progress notification."""
        count = 0
        async for item in self.state.runs.events(run, len(run.events)):
            if item is None:
                continue
            count += 1
            await ctx.session.report_progress(count, None, _progress_text(item[1]))
        await self.state.runs.settled(run)

    async def _ask(self, ctx: Any, run: Run) -> Any:
        """Put the pause to the client's user: None once answered (the run goes on),
        else the result to return (an input_required, or the error naming how to answer)."""
        import mcp_types as types
        from mcp_types.version import MODERN_PROTOCOL_VERSIONS

        capabilities = ctx.session.client_capabilities
        elicits = capabilities is not None and capabilities.elicitation is not None
        if not elicits:
            return _error_result(_resume_hint(self.tool, run), run)
        assert capabilities is not None and capabilities.elicitation is not None
        modern = ctx.protocol_version in MODERN_PROTOCOL_VERSIONS
        by_url = pause_url(run)
        if by_url is not None and capabilities.elicitation.url is not None:
            message, url, elicitation_id = by_url
            if modern:
                request = types.ElicitRequest(
                    params=types.ElicitRequestURLParams(
                        message=message, url=url, elicitation_id=elicitation_id
                    )
                )
                return types.InputRequiredResult(
                    input_requests={PAUSE_KEY: request}, request_state=run.id
                )
            if not ctx.session.can_send_request:
                return _error_result(_resume_hint(self.tool, run), run)
            reply = await ctx.session.elicit_url(
                message, url, elicitation_id, related_request_id=ctx.request_id
            )
            return None if await self._answer_reply(run, reply) else self._result(run)
        message, schema = pause_form(run)
        if modern:
            request = types.ElicitRequest(
                params=types.ElicitRequestFormParams(message=message, requested_schema=schema)
            )
            return types.InputRequiredResult(
                input_requests={PAUSE_KEY: request}, request_state=run.id
            )
        if not ctx.session.can_send_request:
            return _error_result(_resume_hint(self.tool, run), run)
        reply = await ctx.session.elicit_form(message, schema, related_request_id=ctx.request_id)
        return None if await self._answer_reply(run, reply) else self._result(run)

    async def _answer_reply(self, run: Run, reply: Any) -> bool:
        """Answer the run's pause with the user's reply to its question (an ElicitResult);
        False when it ended the run instead (cancel, or no reply at all)."""
        pause = run.pause
        if pause is None or not run.paused:
            return run.working
        action, content = _reply_parts(reply)
        answer = answer_from_form(pause, action, content)
        if answer is None:
            await self.state.runs.abort(run, f"the MCP client's user chose {action}")
            return False
        await self.state.runs.answer(run, answer)
        return True

    def _result(self, run: Run) -> Any:
        import mcp_types as types

        meta = {"harnessc": _run_meta(run)}
        if run.status == "done":
            if self.output is not None and run.output is not None:
                value = run.output
                structured = {"result": value} if self.output.wrapped else value
                text = json.dumps(value, ensure_ascii=False)
                return types.CallToolResult(
                    content=[types.TextContent(text=text)],
                    structured_content=structured,
                    _meta=meta,
                )
            return types.CallToolResult(content=[types.TextContent(text=run.text)], _meta=meta)
        if run.paused:
            return _error_result(_resume_hint(self.tool, run), run)
        text = f"the run ended {run.status}: {run.reason}"
        return types.CallToolResult(
            content=[types.TextContent(text=text)], is_error=True, _meta=meta
        )


def _reply_parts(reply: Any) -> tuple[str, dict[str, Any] | None]:
    """(action, content) of an ElicitResult, as a model or as its JSON."""
    if reply is None:
        return "cancel", None
    if hasattr(reply, "model_dump"):
        reply = reply.model_dump(by_alias=True, exclude_none=True)
    if not isinstance(reply, dict):
        return "cancel", None
    action = str(reply.get("action", "cancel"))
    content = reply.get("content")
    return action, content if isinstance(content, dict) else None


def _run_meta(run: Run) -> dict[str, Any]:
    out: dict[str, Any] = {
        "run_id": run.id,
        "session_id": run.session_id or None,
        "status": run.status,
        "usage": run.usage.to_dict(),
    }
    if run.paused and run.pause is not None:
        out["pause"] = run.pause.to_dict()
    return out


def _error_result(text: str, run: Run | None = None) -> Any:
    import mcp_types as types

    meta = {"harnessc": _run_meta(run)} if run is not None else None
    return types.CallToolResult(content=[types.TextContent(text=text)], is_error=True, _meta=meta)


def _progress_text(encoded: str) -> str:
    """A short line for a progress notification: the event's type and tool."""
    try:
        event = json.loads(encoded)
    except ValueError:
        return "working"
    kind = str(event.get("type", "event"))
    name = event.get("tool_name") or event.get("toolName")
    return f"{kind}: {name}" if name else kind


# -- stdio --------------------------------------------------------------------------------


async def serve_stdio(state: ServeState) -> None:
    """Serve the agent over this process's stdin and stdout until stdin closes."""
    from mcp.server.stdio import stdio_server

    door = McpDoor(state)
    door.prepare()
    try:
        async with stdio_server() as (read_stream, write_stream):
            await door.server.run(
                read_stream, write_stream, door.server.create_initialization_options()
            )
    finally:
        await state.runs.drain(state.config.drain_s)


# -- streamable HTTP ----------------------------------------------------------------------


class LazyMcp:
    """``/mcp``: the SDK's streamable-HTTP session manager, made on the first request
    (importing the SDK takes most of a second; a server no MCP client calls never pays
    it) and running until the app stops."""

    def __init__(self, state: ServeState) -> None:
        self.state = state
        self.manager: Any = None
        self._stop: Any = None
        self._task: Any = None
        self._lock: Any = None

    def routes(self) -> list[BaseRoute]:
        from starlette.routing import Route

        return [Route(MCP_PATH, self, methods=["GET", "POST", "DELETE"])]

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        manager = await self._started()
        await manager.handle_request(scope, receive, send)

    async def _started(self) -> Any:
        import asyncio

        if self.manager is not None:
            return self.manager
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            if self.manager is None:
                manager = self._manager()
                ready = asyncio.Event()
                self._stop = asyncio.Event()
                self._task = asyncio.create_task(self._run(manager, ready))
                await ready.wait()
                self.manager = manager
        return self.manager

    def _manager(self) -> Any:
        from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
        from mcp.server.transport_security import TransportSecuritySettings

        from harnessc.runtime.serve.config import is_loopback

        door = McpDoor(self.state)
        door.prepare()
        config = self.state.config
        security = None
        if config.token is None and is_loopback(config.host):
            # no token: only this machine's clients, never a web page's (DNS rebinding)
            security = TransportSecuritySettings(
                enable_dns_rebinding_protection=True,
                allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*"],
                allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"],
            )
        return StreamableHTTPSessionManager(
            app=door.server,
            security_settings=security,
            max_request_body_size=config.max_body_bytes,
        )

    async def _run(self, manager: Any, ready: Any) -> None:
        async with manager.run():
            ready.set()
            await self._stop.wait()

    async def close(self) -> None:
        """Stop the session manager (the app's lifespan ends)."""
        if self._task is None:
            return
        self._stop.set()
        with contextlib.suppress(Exception):
            await self._task
