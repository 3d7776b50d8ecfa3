"""Sub-agents: an agent hands work to others through one tool, ``task``.

``SubAgents`` is the extension a spec with ``agents:`` installs. It adds the hand-over
tool ``task`` (Claude Code's Agent tool: ``subagent_type``, ``description``,
``prompt``); hooks and permission rules see its calls under the name ``Agent``. A
hand-over runs the named sub-agent as an ``AgentHarness`` of its own:

- its own context: its system prompt and skills, and the hand-over prompt only;
- its own session, a file under the parent's session folder
  (``<parent file without .jsonl>/<agent>-<call id>.jsonl``), whose header names the
  parent session and call; the hand-over's result details name the file;
- one budget: its limits are its own, tightened to what is left of the parent's, and
  what it used is added to the parent's usage;
- one pause: when it pauses (an external tool, an ``ask``, a hook, a budget limit) the
  hand-over raises ``HoldCall``, so the parent pauses too, with the sub-agent's pending
  calls named by their agent path; the parent's ``resume`` passes the answers down,
  and the sub-agent resumes in place (in a new process from its session file);
- its events reach the parent's stream as ``SubagentEvent`` tagged with its path;
- the parent's abort reaches it (it runs on the parent's task; the signal aborts it).

A compiled sub-agent (``spec:``) is the ``build_options`` of its generated module,
imported by path on the first hand-over; a Claude Code subagent file runs on the
parent's options with its own system prompt, tools and model.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import sys
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, Protocol

import msgspec

from harnessc.runtime.agent.handover_caps import HandOverCaps, Slots
from harnessc.runtime.agent.harness import AgentHarness
from harnessc.runtime.agent.results import RunResult
from harnessc.runtime.agent.usage_tree import TREE_DETAILS, usage_of_run
from harnessc.runtime.core.budget import BUDGET_LIMITS, Budget, BudgetUsage
from harnessc.runtime.core.events import (
    Event,
    HandoverProgressEvent,
    SubagentEvent,
    to_jsonable,
)
from harnessc.runtime.core.handovers import HandoverTracker
from harnessc.runtime.core.loop_states import LoopState
from harnessc.runtime.core.messages import TextContent
from harnessc.runtime.core.options import MAX_SUBAGENT_DEPTH
from harnessc.runtime.core.signal import AbortSignal
from harnessc.runtime.options.harness_options import AgentHarnessOptions
from harnessc.runtime.permissions.gate import (
    find_gate,
    pending_asks,
    record_answer,
    with_parent_rules,
)
from harnessc.runtime.permissions.rules import HANDOVER_TOOL
from harnessc.runtime.session.entries import SessionHeader
from harnessc.runtime.session.session import Session
from harnessc.runtime.session.storage import JsonlStorage
from harnessc.runtime.telemetry.extension import trace_subagent
from harnessc.runtime.tools.base import ExecutionMode, HoldCall, ToolResult, ToolUpdate

if TYPE_CHECKING:
    from harnessc.runtime.agent.remote_a2a import RemoteA2A, RemoteSteps
    from harnessc.runtime.options.harness_context import HarnessContext

__all__ = [
    "HANDOVER_TOOL",
    "SubAgent",
    "SubAgentRuntime",
    "SubAgents",
    "child_session_dir",
    "pass_budget_raise",
    "register_module",
    "usage_line",
]

_SAFE = re.compile(r"[^A-Za-z0-9_-]+")


@dataclass(slots=True, frozen=True)
class SubAgent:
    """One sub-agent an agent may hand work to.

    ``module``: a compiled spec's generated module (its ``build_options`` makes the
    sub-agent's options). ``remote``: a remote A2A agent (``remote_a2a``). Otherwise a
    Claude Code subagent file: it runs on the parent's options with ``system_prompt``,
    the parent's tools named in ``tools`` (None: all of them) and the parent's model
    ``model`` (None: the parent's).
    """

    name: str
    description: str
    module: Path | None = None
    system_prompt: str | None = None
    tools: tuple[str, ...] | None = None
    model: str | None = None
    permission_mode: str | None = None
    source: str = ""  # the file it was declared in (for messages)
    remote: RemoteA2A | None = None
    # the limits of each hand-over to it (``agents.<name>.budget`` of the parent's spec),
    # beside its own spec's and what is left of the tree's: the tightest holds
    budget: Budget | None = None


class SubAgentRuntime(Protocol):
    """How a sub-agent's session and harness are made (a durable run makes them of
    checkpointed steps); ``key`` names the hand-over in its run: the agent path and the
    call id, joined by ``/``."""

    def session(self, header: SessionHeader, file: str | None, key: str) -> Session: ...

    def harness(self, options: AgentHarnessOptions, key: str) -> AgentHarness: ...

    def remote_steps(self) -> RemoteSteps | None:
        """How a send to a remote A2A agent is recorded (None: it is not)."""
        ...


@dataclass(slots=True)
class _Live:
    harness: AgentHarness
    path: tuple[str, ...]


@dataclass(slots=True)
class SubAgents:
    """The extension of an agent with sub-agents: installs the ``task`` tool."""

    agents: Sequence[SubAgent]
    max_depth: int = 1
    agent: str = "agent"  # this agent's name: the first part of the agent path
    depth: int = 0  # 0 for the top-level agent
    path: tuple[str, ...] = ()  # the agent path of this agent (set for sub-agents)
    # This agent's build_options: fresh options (hooks, extensions) for a Claude Code
    # file's sub-agent; None: the parent's options without their extensions.
    build: Callable[..., AgentHarnessOptions] | None = None
    # The interactive user's permission question (set by the interactive prompt): a
    # sub-agent's ``ask`` is asked there instead of pausing the run. None: it pauses.
    asker: Callable[[str, Any, Any], Awaitable[str]] | None = None
    # The "always" answers given for the sub-agents of an agent without rules of its own.
    remembered: list[Any] = field(default_factory=list)
    # The command line's change to the options of every agent of the tree, made to the
    # top agent's as well (--base-url / $HARNESSC_BASE_URL points every model at a server).
    adjust: Callable[[AgentHarnessOptions], None] | None = None
    runtime: SubAgentRuntime | None = None  # None: plain sessions and harnesses
    # A served or durable run's: the logins and questions of its sub-agents' own MCP
    # servers pause the whole tree (their toolsets get a PausingUser, found through
    # ``child_extensions``); False: the default user answers them (the terminal).
    mcp_pausing: bool = False
    max_parallel: int | None = None  # this agent's hand-overs running at once
    max_parallel_tree: int | None = None  # the tree's (the top agent's setting holds)
    tree_slots: Slots | None = None  # the tree's places, shared by its agents (set below)
    name: str = "subagents"
    _host: AgentHarness | None = field(default=None, init=False, repr=False)
    _live: dict[str, _Live] = field(default_factory=dict, init=False, repr=False)
    _clients: Any = field(default=None, init=False, repr=False)  # an HttpClientPool
    _caps: HandOverCaps | None = field(default=None, init=False, repr=False)

    @property
    def command_names(self) -> tuple[str, ...]:
        return ()

    @property
    def agent_path(self) -> tuple[str, ...]:
        return self.path or (self.agent,)

    def install(self, harness: HarnessContext) -> None:
        if self.depth >= self.max_depth or not self.agents:
            return  # at the deepest level an agent cannot delegate
        if not isinstance(harness, AgentHarness):
            raise TypeError("sub-agents need an AgentHarness")
        self._host = harness
        self._caps = HandOverCaps.make(self.max_parallel, self.tree_slots, self.max_parallel_tree)
        self.tree_slots = self._caps.tree
        harness.add_tools([_HandOver(self)])
        harness.on_close(self._close)
        if any(a.remote is not None for a in self.agents):
            harness.on("abort", self._cancel_remote_tasks)

    async def _cancel_remote_tasks(self, event: Any) -> None:
        """An aborted run (working or paused): the remote tasks its hand-overs left
        waiting are cancelled (``tasks/cancel``)."""
        from harnessc.runtime.agent.remote_a2a import cancel_task

        host = self._host
        run = host.run_state if host is not None else None
        for record in run.calls if run is not None else []:
            remote = (record.nested or {}).get("remote")
            agent = self.find(str((record.nested or {}).get("agent", "")))
            aborted = record.result is not None and record.result.is_error
            if isinstance(remote, dict) and agent is not None and agent.remote and aborted:
                await cancel_task(agent.remote, str(remote.get("task_id", "")))

    async def _close(self) -> None:
        live, self._live = self._live, {}
        for item in live.values():
            await item.harness.close()
        clients, self._clients = self._clients, None
        if clients is not None:
            await clients.aclose()

    def child_extensions(self) -> list[Sequence[Any]]:
        """The extensions of the sub-agents working or paused in this agent's calls
        (whose MCP users hold their logins and questions: ``pausing_user.users_of``)."""
        return [live.harness.options.extensions for live in self._live.values()]

    def http_clients(self) -> Any:
        """The HTTP clients sub-agents share: the parent's when it was given some, else
        one pool for every sub-agent of this agent (closed with it)."""
        host = self._host
        assert host is not None
        if host.options.http_clients is not None:
            return host.options.http_clients
        if self._clients is None:
            from harnessc.runtime.providers.clients import HttpClientPool

            self._clients = HttpClientPool()
        return self._clients

    # -- the hand-over --------------------------------------------------------------

    def find(self, name: str) -> SubAgent | None:
        return next((a for a in self.agents if a.name == name), None)

    async def hand_over(
        self, call_id: str, params: dict[str, Any], signal: AbortSignal, on_update: ToolUpdate
    ) -> ToolResult:
        """Run (or resume) the hand-over once it has a place under the caps."""
        caps = self._caps
        if caps is None:
            return await self._hand_over(call_id, params, signal, on_update)

        def waiting() -> None:
            running = caps.tree.running if caps.tree.full else caps.agent.running
            text = f"waiting to start: {running} hand-overs are running (max_parallel)"
            on_update(ToolResult([TextContent(text)]))

        async with caps.place(waiting):
            return await self._hand_over(call_id, params, signal, on_update)

    async def _hand_over(
        self, call_id: str, params: dict[str, Any], signal: AbortSignal, on_update: ToolUpdate
    ) -> ToolResult:
        host = self._host
        assert host is not None
        name = str(params.get("subagent_type", ""))
        agent = self.find(name)
        if agent is None:
            known = ", ".join(a.name for a in self.agents)
            return _error(f"No sub-agent {name!r}; the sub-agents are: {known}")
        path = (*self.agent_path, agent.name)
        if len(path) - 1 > MAX_SUBAGENT_DEPTH:
            return _error(
                f"Sub-agent {name!r} not started: sub-agents nest at most "
                f"{MAX_SUBAGENT_DEPTH} levels (the ceiling of max_depth), and "
                f"{' > '.join(path[:-1])} is {len(path) - 2} levels deep already"
            )
        record = host.run_state.record(call_id) if host.run_state is not None else None
        if agent.remote is not None:
            return await self._hand_over_remote(agent, agent.remote, path, call_id, params, signal)
        answers = (record.answers if record is not None else None) or {}
        nested = (record.nested if record is not None else None) or {}
        live = self._live.get(call_id)
        if live is None and nested.get("session"):
            live = _Live(self._reopen(agent, path, str(nested["session"])), path)
        if live is not None:
            self._live[call_id] = live
            child = live.harness
            own = _raised(_own_limits(child), child.budget.budget, answers.get("budget"))
            if answers.get("budget"):  # a deeper hand-over stopped at its limit goes on too
                pass_budget_raise(child, answers["budget"])
            child.budget.budget = _tightest(own, host.budget, child.budget)
            results = answers.get("results") or None
            approvals = answers.get("approvals") or None
            if approvals:
                _record_approvals(child, approvals)
            return await self._run(
                call_id, agent, child, signal, lambda: child.resume(results, approvals=approvals)
            )
        options = self._options(agent, path, call_id)
        if self.runtime is None:
            child = AgentHarness(options)
        else:
            child = self.runtime.harness(options, "/".join((*path, call_id)))
        child.budget.budget = _tightest(child.budget.budget, host.budget)
        self._live[call_id] = _Live(child, path)
        prompt = str(params.get("prompt", ""))
        return await self._run(call_id, agent, child, signal, lambda: child.prompt(prompt))

    async def _hand_over_remote(
        self,
        agent: SubAgent,
        remote: RemoteA2A,
        path: tuple[str, ...],
        call_id: str,
        params: dict[str, Any],
        signal: AbortSignal,
    ) -> ToolResult:
        """A hand-over to a remote A2A agent: its task, or the answer to its question
        (the call's record holds the task a pause left)."""
        from harnessc.runtime.agent.remote_a2a import RemoteHandOver

        host = self._host
        assert host is not None
        record = host.run_state.record(call_id) if host.run_state is not None else None
        handover = RemoteHandOver(
            remote,
            name=agent.name,
            path=path,
            call_id=call_id,
            emit=host.emit,
            usage=host.budget.usage,
            steps=self.runtime.remote_steps() if self.runtime is not None else None,
        )
        nested = record.nested if record is not None else None
        answers = record.answers if record is not None else None
        return await handover.run(str(params.get("prompt", "")), signal, nested, answers)

    async def _run(
        self,
        call_id: str,
        agent: SubAgent,
        child: AgentHarness,
        signal: AbortSignal,
        start: Callable[[], Any],
    ) -> ToolResult:
        host = self._host
        assert host is not None
        path = self._live[call_id].path

        progress = HandoverTracker()

        async def forward(event: Event) -> None:
            if isinstance(event, (SubagentEvent, HandoverProgressEvent)):  # a deeper agent's
                await host.emit(event)
                return
            tagged = SubagentEvent(agent_path=list(path), tool_call_id=call_id, event=event)
            await host.emit(tagged)
            moved = progress.see(tagged)  # the hand-over's turn and tokens, for the doors
            if moved is not None:
                await host.emit(moved)

        unsubscribe = child.subscribe(forward)
        record = host.run_state.record(call_id) if host.run_state is not None else None
        if record is not None:  # its spans nest under the hand-over call's (when traced)
            trace_subagent(host, child, call_id, record.call.name, record.call.arguments, path)
        stop = signal.add_listener(lambda: child.abort(signal.reason or "aborted"))
        before = msgspec.structs.replace(child.budget.usage)
        try:
            result: RunResult = await start()
        except RecursionError:  # never an internal error: the tree says where it stopped
            return _error(
                f"Sub-agent {agent.name} stopped: the agent tree {' > '.join(path)} is "
                "nested too deep for this process"
            )
        finally:
            stop()
            unsubscribe()
            _add_usage(host.budget.usage, before, child.budget.usage)
        if result.status in ("paused", "awaiting_tool"):
            raise HoldCall(
                result.reason or result.status,
                {
                    "agent": agent.name,
                    "path": list(path),
                    "session": child.session.path,
                    "status": result.status,
                    "pending": _pending(child, path),
                },
            )
        live = self._live.pop(call_id, None)
        details = {
            "agent": agent.name,
            "agent_path": list(path),
            "status": result.status,
            "reason": result.reason,
            "session": child.session.path,
            "session_id": child.session.id,
            **child.budget.usage.to_dict(),
            TREE_DETAILS: usage_of_run(result.messages, path),  # by agent path, for the parent
        }
        if live is not None:
            await live.harness.close()
        text = result.text
        output = getattr(result, "output", None)  # a typed sub-agent's value (RunResult.output)
        if output is not None:
            text = json.dumps(to_jsonable(output), ensure_ascii=False)
            details["output"] = to_jsonable(output)
        if result.status != "done":
            return ToolResult(
                [TextContent(f"Sub-agent {agent.name} ended {result.status}: {result.reason}")],
                details=details,
                is_error=True,
            )
        return ToolResult(
            [TextContent(f"{text}\n\n{usage_line(agent.name, child.budget.usage)}")],
            details=details,
        )

    # -- the sub-agent's options ------------------------------------------------------

    def _options(self, agent: SubAgent, path: tuple[str, ...], call_id: str) -> AgentHarnessOptions:
        session = self._new_session(agent, path, call_id)
        return self._wire(agent, path, session)

    def _wire(
        self, agent: SubAgent, path: tuple[str, ...], session: Session
    ) -> AgentHarnessOptions:
        cwd = session.cwd or None
        if agent.module is not None:
            built = _module(agent.module).build_options(
                session=session, cwd=cwd, http_clients=self.http_clients()
            )
            options: AgentHarnessOptions = built
            self._share_mcp(options)
        else:
            options = self._claude_options(agent, session)
        # the parent's checkpoints before and after the hand-over cover what it changes
        options.checkpoints = None
        if agent.budget is not None:  # the parent's limits of a hand-over to it
            options.budget = _narrowest(options.budget, agent.budget)
        if self.adjust is not None:
            self.adjust(options)
        mode = self._mode_for(agent)
        if mode is not None:
            options.hooks = _with_mode(options.hooks, mode)
        self._inherit(options)
        extensions = []
        asker, remembered = self._questions()
        for ext in options.extensions:
            if isinstance(ext, SubAgents):
                ext = dataclasses.replace(
                    ext,
                    depth=self.depth + 1,
                    max_depth=self.max_depth,
                    path=path,
                    asker=asker,
                    remembered=remembered,
                    adjust=self.adjust,
                    tree_slots=self.tree_slots,
                    mcp_pausing=self.mcp_pausing,
                )
            extensions.append(ext)
        options.extensions = extensions
        if self.mcp_pausing:
            _pause_own_mcp(extensions, " > ".join(path))
        gate = find_gate(options.hooks)
        if gate is not None and asker is not None:
            # Asked where this agent asks (the interactive prompt), naming the agent
            # path, instead of pausing; one list of "always" answers for the tree.
            gate.asker = _PathAsker(asker, " > ".join(path))
            gate.remembered = remembered
        return options

    def _inherit(self, options: AgentHarnessOptions) -> None:
        """The parent's limits hold below it: its deny and ask rules join the sub-agent's
        own, and its sandbox bounds the sub-agent's (which may only narrow it)."""
        host = self._host
        assert host is not None
        parent = host.options
        if parent.sandbox is not None:
            options.sandbox = parent.sandbox.narrowed(options.sandbox)
        gate = find_gate(parent.hooks)
        if gate is not None:
            options.hooks = with_parent_rules(options.hooks, gate)

    def _mode_for(self, agent: SubAgent) -> str | None:
        """The permission mode this agent's mode imposes on a sub-agent, or None (it
        keeps its own): plan (read-only) and bypass hold for the whole tree, and a
        Claude Code file without ``permissionMode`` runs in its parent's mode."""
        host = self._host
        assert host is not None
        gate = find_gate(host.options.hooks)
        if gate is None:
            return None
        if gate.mode in ("plan", "bypass"):
            return gate.mode
        if agent.module is None and agent.permission_mode is None and gate.mode != "default":
            return gate.mode
        return None

    def _questions(self) -> tuple[Any, list[Any]]:
        """Who answers the tree's permission questions (the user at the interactive
        prompt, or None: an ``ask`` pauses the run) and the tree's "always" answers:
        this agent's gate's when it has one, else those the interactive prompt gave."""
        host = self._host
        assert host is not None
        gate = find_gate(host.options.hooks)
        asker = gate.asker if gate is not None and gate.asker is not None else self.asker
        if isinstance(asker, _PathAsker):  # this agent is a sub-agent: the user's own
            asker = asker.asker
        return asker, gate.remembered if gate is not None else self.remembered

    def _claude_options(self, agent: SubAgent, session: Session) -> AgentHarnessOptions:
        """A Claude Code file's sub-agent: this agent's own options, built afresh (no
        hook or extension instance is shared), with the file's system prompt, tools and
        model; this agent's MCP tools are shared, not started again."""
        host = self._host
        assert host is not None
        parent = host.options
        if self.build is not None:
            options = self.build(
                session=session, cwd=session.cwd or None, http_clients=self.http_clients()
            )
        else:
            options = msgspec.structs.replace(
                parent, session=session, extensions=[], http_clients=self.http_clients()
            )
        delegate = agent.tools is not None and HANDOVER_TOOL in agent.tools
        extensions = [e for e in options.extensions if delegate or not isinstance(e, SubAgents)]
        mcp = [t for n, t in host.tools.items() if n.startswith("mcp__")]
        if mcp:
            from harnessc.runtime.mcp.toolset import McpToolset

            extensions = [e for e in extensions if not isinstance(e, McpToolset)]
        options.extensions = extensions
        options.tools = [*options.tools, *mcp]
        options.system_prompt = agent.system_prompt
        if agent.tools is not None:
            options.active_tool_names = [t for t in agent.tools if t != HANDOVER_TOOL]
        # its own model (a key of the parent's models), else the one the parent runs on
        # (chosen by --model or /model); a Model of the parent's not among its models
        # (one given to the harness directly) is taken as it is
        key = agent.model or host.model_key()
        options.model = key if key in options.models else host.model
        options.budget = None
        # the parent's typed result is the parent's answer: a Claude Code file has no
        # output of its own, so it answers in text (handed back as the call's result)
        options.output = None
        if agent.permission_mode is not None:
            options.hooks = _with_mode(options.hooks, agent.permission_mode)
        return options

    def _share_mcp(self, options: AgentHarnessOptions) -> None:
        """A spec sub-agent's MCP servers declared exactly as its parent's are not
        started again: it gets the parent's tools of those servers."""
        host = self._host
        assert host is not None
        toolset = "harnessc.runtime.mcp.toolset"
        if not any(type(e).__module__ == toolset for e in host.options.extensions):
            return
        from harnessc.runtime.mcp.config import tool_prefix
        from harnessc.runtime.mcp.toolset import McpToolset

        running = [
            s for e in host.options.extensions if isinstance(e, McpToolset) for s in e.servers
        ]
        kept: list[Any] = []
        for ext in options.extensions:
            if isinstance(ext, McpToolset):
                shared = [s for s in ext.servers if s in running]
                prefixes = tuple(tool_prefix(s.name, s.prefix) for s in shared)
                if prefixes:
                    tools = [t for n, t in host.tools.items() if n.startswith(prefixes)]
                    options.tools = [*options.tools, *tools]
                    ext.servers = [s for s in ext.servers if s not in shared]
                if not ext.servers:
                    continue  # every server of it is the parent's
            kept.append(ext)
        options.extensions = kept

    def _new_session(self, agent: SubAgent, path: tuple[str, ...], call_id: str) -> Session:
        host = self._host
        assert host is not None
        parent = host.session
        metadata = {
            "agent": agent.name,
            "agent_path": list(path),
            "parent": {"session": parent.id, "file": parent.path, "call": call_id},
        }
        cwd = parent.cwd or os.getcwd()
        header = SessionHeader.new(cwd=cwd, metadata=metadata)
        file: str | None = None
        if parent.path is not None:
            folder = child_session_dir(parent.path)
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            file = str(folder / f"{_SAFE.sub('-', agent.name)}-{_SAFE.sub('-', call_id)}.jsonl")
        if self.runtime is not None:
            return self.runtime.session(header, file, "/".join((*path, call_id)))
        if file is None:
            return Session(header=header)
        storage = JsonlStorage.create(file, header)
        return Session(header=header, storage=storage, path=file)

    def _reopen(self, agent: SubAgent, path: tuple[str, ...], file: str) -> AgentHarness:
        """A paused sub-agent of an earlier process, rebuilt from its session file."""
        host = self._host
        assert host is not None
        parent = host.session
        if parent.path is None or Path(file).parent != child_session_dir(parent.path):
            raise RuntimeError(f"{' > '.join(path)}: its session {file} is not the parent's")
        storage, loaded = JsonlStorage.open_locked(file)
        session = Session(
            header=loaded.header,
            entries=loaded.entries,
            storage=storage,
            path=file,
            diagnostics=loaded.diagnostics,
        )
        return AgentHarness(self._wire(agent, path, session))


@dataclass(slots=True, frozen=True)
class _PathAsker:
    """The user's permission question for a sub-agent's call: the reason names the
    agent path (``lead > reviewer``)."""

    asker: Callable[[str, Any, Any], Awaitable[str]]
    where: str

    async def __call__(self, tool: str, args: Any, decision: Any) -> str:
        named = msgspec.structs.replace(decision, reason=f"{decision.reason} (in {self.where})")
        return await self.asker(tool, args, named)


class _HandOver:
    """The ``task`` tool: Claude Code's Agent tool input, one sub-agent per call."""

    label = "Agent"
    execution_mode: ExecutionMode = "parallel"
    external = False
    # a durable run checkpoints the sub-agent's model calls and tools, not the hand-over
    steps_inside = True

    def __init__(self, owner: SubAgents) -> None:
        self.name = HANDOVER_TOOL
        self._owner = owner
        listed = "\n".join(f"- {a.name}: {a.description}" for a in owner.agents)
        self.description = (
            "Hand a task to a sub-agent, which works on it with its own context and tools "
            "and returns its final answer. Give it everything it needs in the prompt: it "
            "does not see this conversation. Several calls in one reply run in parallel.\n"
            f"Sub-agents:\n{listed}"
        )
        self.parameters: dict[str, Any] = {
            "type": "object",
            "properties": {
                "subagent_type": {
                    "type": "string",
                    "enum": [a.name for a in owner.agents],
                    "description": "The sub-agent to hand the task to.",
                },
                "description": {
                    "type": "string",
                    "description": "A short (3-5 word) description of the task.",
                },
                "prompt": {"type": "string", "description": "The task for the sub-agent."},
            },
            "required": ["subagent_type", "description", "prompt"],
        }

    async def execute(
        self,
        tool_call_id: str,
        params: dict[str, Any],
        signal: AbortSignal,
        on_update: ToolUpdate,
        context: Any,
    ) -> ToolResult:
        return await self._owner.hand_over(tool_call_id, params, signal, on_update)


# -- helpers -----------------------------------------------------------------------------


def child_session_dir(parent_file: str) -> Path:
    """The folder of a session's sub-agent sessions: its file name without ``.jsonl``."""
    path = Path(parent_file)
    return path.with_name(path.name.removesuffix(".jsonl"))


def usage_line(name: str, usage: BudgetUsage) -> str:
    """What a hand-over's result says the sub-agent used (as Claude Code's does)."""
    return f"[{name}: {usage.turns} turns, {usage.tool_calls} tool calls, {usage.tokens} tokens]"


def _with_mode(hooks: Sequence[Any], mode: str) -> list[Any]:
    """The parent's hooks with its permission rules in a Claude Code file's
    ``permissionMode`` (a gate with no rules when the parent has none)."""
    from harnessc.runtime.core.hooks import HookSpec
    from harnessc.runtime.permissions.gate import PermissionGate
    from harnessc.runtime.permissions.rules import PermissionRules

    gate = find_gate(hooks)
    mine = PermissionGate(
        gate.rules if gate is not None else PermissionRules.from_config(None), mode
    )
    spec = HookSpec(moment="tool_call", handler=mine, name="permissions")
    kept = [h for h in hooks if getattr(h, "handler", None) is not gate or gate is None]
    return [*kept, spec]


def _pause_own_mcp(extensions: Sequence[Any], path: str) -> None:
    """A sub-agent's own MCP toolsets (not its parent's shared servers) with no user of
    their own get a ``PausingUser``: a login or a question pauses the sub-agent, so the
    whole tree, and the answer reaches it through ``child_extensions``."""
    toolset = "harnessc.runtime.mcp.toolset"
    found = [e for e in extensions if type(e).__module__ == toolset and e.user is None]
    if not found:
        return
    from harnessc.runtime.mcp.pausing_user import PausingUser

    for extension in found:
        extension.user = PausingUser(path)


def _error(text: str) -> ToolResult:
    return ToolResult([TextContent(text)], is_error=True)


def _pending(child: AgentHarness, path: tuple[str, ...]) -> list[dict[str, Any]]:
    run = child.run_state
    if run is None:
        return []
    out: list[dict[str, Any]] = []
    awaiting = child.state is LoopState.AWAITING_TOOL
    for record in run.calls:
        if record.result is not None:
            continue
        deeper = record.nested_calls()
        if deeper:
            out.extend({"call": c.to_dict(), "kind": kind, "path": p} for c, kind, p in deeper)
        elif awaiting and record.status == "awaiting":
            out.append({"call": record.call.to_dict(), "kind": "tool", "path": " > ".join(path)})
        elif not awaiting and record.status == "held":
            out.append(
                {"call": record.shown.to_dict(), "kind": "approval", "path": " > ".join(path)}
            )
    return out


def _record_approvals(child: AgentHarness, approvals: dict[str, Any]) -> None:
    """The answers to the sub-agent's own held asks, recorded in its session as the
    top agent's are (``--approve`` / ``--deny``): its permission gate reads them when the
    call is prepared again, so a gate that can ask the user does not ask again."""
    pending = pending_asks(child.session)
    for call_id, allowed in approvals.items():
        held = pending.get(call_id)
        if held is not None:
            decision = "allow" if allowed else "deny"
            record_answer(child.session, str(held["tool"]), dict(held["args"]), decision, call_id)


def _own_limits(child: AgentHarness) -> Budget:
    return child.options.budget or Budget()


def _limits(budget: Budget) -> dict[str, Any]:
    return {name: getattr(budget, name) for name in BUDGET_LIMITS}


def _narrowest(own: Budget | None, given: Budget) -> Budget:
    """Each limit the lower of ``own``'s and ``given``'s (a missing one: the other's)."""
    if own is None:
        return given
    values = {}
    for name in BUDGET_LIMITS:
        mine, theirs = getattr(own, name), getattr(given, name)
        values[name] = theirs if mine is None else mine if theirs is None else min(mine, theirs)
    return Budget(**values, soft_ratio=own.soft_ratio)


def _raised(own: Budget, current: Budget, raised: Any) -> Budget:
    """A resumed sub-agent's own limits: those raised for it before (``current``, its
    limits in force, restored from its session) stay raised, and the limits the resume
    raised by name (``raised``) are raised for it too."""
    values = _limits(own)
    given = raised if isinstance(raised, dict) else {}
    for name in BUDGET_LIMITS:
        mine, kept = values[name], getattr(current, name)
        if mine is not None and kept is not None and kept > mine:
            values[name] = mine = kept
        value = given.get(name)
        if mine is not None and isinstance(value, int | float) and not isinstance(value, bool):
            values[name] = max(mine, int(value) if isinstance(mine, int) else float(value))
    return Budget(**values, soft_ratio=own.soft_ratio)


def pass_budget_raise(harness: AgentHarness, limits: dict[str, Any]) -> None:
    """A resume's raised limits (by name) for the hand-overs of ``harness``'s run that a
    sub-agent's own limit stopped: each hand-over's sub-agent gets them when it goes on
    (a hand-over waiting on calls gets its answers there instead)."""
    run = harness.run_state
    for record in run.calls if run is not None else []:
        nested = record.nested
        if record.result is None and isinstance(nested, dict) and not record.nested_calls():
            record.answers = {**(record.answers or {}), "budget": dict(limits)}


def _tightest(own: Budget, parent: Any, child: Any | None = None) -> Budget:
    """``own`` limits, each cut to what the sub-agent has used (``child``, a tracker)
    plus what is left of the parent's (``parent``, a tracker)."""
    values: dict[str, Any] = {}
    for name in BUDGET_LIMITS:
        mine = getattr(own, name)
        theirs = getattr(parent.budget, name)
        if theirs is not None:
            used = child.used(name) if child is not None and name != "wall_clock_s" else 0
            left = max(0, theirs - parent.used(name)) + used
            left = int(left) if isinstance(theirs, int) else left
            mine = left if mine is None else min(mine, left)
        values[name] = mine
    return Budget(**values, soft_ratio=own.soft_ratio)


def _add_usage(total: BudgetUsage, before: BudgetUsage, after: BudgetUsage) -> None:
    total.turns += after.turns - before.turns
    total.tool_calls += after.tool_calls - before.tool_calls
    total.tokens += after.tokens - before.tokens
    total.cost_usd += after.cost_usd - before.cost_usd


def register_module(file: Path, module: ModuleType) -> None:
    """Use ``module`` as the sub-agent module of ``file`` (``harnessc run`` and ``dev``
    compile the sub-agents' modules in memory, without writing them)."""
    sys.modules[_module_name(file)] = module


def _module_name(file: Path) -> str:
    return f"harnessc_agents.{_SAFE.sub('_', str(file.resolve()))}"


def _module(file: Path) -> ModuleType:
    """A compiled sub-agent's generated module, imported from its file once."""
    from harnessc.runtime.tools.pyfunc import module_from_file

    module: ModuleType = module_from_file(file, _module_name(file))
    return module
