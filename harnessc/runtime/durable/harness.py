"""The harness of a durable run and of each of its sub-agents: every model call and
every tool it executes is a checkpointed step of the one run's workflow.

``RunSteps`` is what they share: the event sink, the run clock and the server override.
``DurableHarness`` wraps every tool it is given, at the start or later (an extension's
at install, an MCP server's when the run starts), as a ``DurableTool``; an external
tool is a durable wait instead, and the sub-agent hand-over (``task``) is no step of its
own: the sub-agent it starts is a ``DurableHarness`` too (``DurableSubAgents``), so its
model calls and tools are steps of the parent's workflow, in one order, and a recovered
run replays a finished hand-over from its steps without running or asking anything
again. A hand-over to a remote A2A agent records its task's id and end as steps
(``RemoteTaskSteps``): a recovered run re-attaches to the task instead of sending it
again. A sub-agent's session gets reproducible entry ids and the run clock's times, as
the run's own session does, and its file skips the entries it already holds.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import msgspec

from harnessc.runtime.agent import AgentHarness, checkpoints
from harnessc.runtime.agent.subagents import SubAgents
from harnessc.runtime.durable.session import DurableSession, ReplayStorage, RunClock
from harnessc.runtime.durable.steps import (
    DurableProvider,
    DurableTool,
    EventSink,
    RemoteTaskSteps,
    checkpoint_runner,
)
from harnessc.runtime.options.harness_options import AgentHarnessOptions
from harnessc.runtime.session.entries import SessionHeader
from harnessc.runtime.session.session import Session
from harnessc.runtime.tools.base import AgentTool

__all__ = ["DurableHarness", "DurableSubAgents", "RunSteps", "SubAgentInputs", "prepare"]


@dataclass(slots=True)
class RunSteps:
    """What the harnesses of one durable run share: the events since the last step, the
    run clock, and the server every model is pointed at (``--base-url``)."""

    sink: EventSink
    clock: RunClock
    base_url: tuple[str, str] | None = None
    sandbox: str | None = None  # the operator's --sandbox mode (None: the spec's)


@dataclass(slots=True, frozen=True)
class SubAgentInputs:
    """A sub-agent's ``RunInputs``: the run clock, and a run id of its own made of the
    run's id and its hand-over's key (the same in every execution of the run)."""

    clock_of: RunClock
    run_id: str

    def clock(self) -> float:
        return self.clock_of.clock()

    def new_run_id(self) -> str:
        return self.run_id


def prepare(options: AgentHarnessOptions, steps: RunSteps, inputs: Any) -> AgentHarnessOptions:
    """``options`` made durable: the model calls checkpointed, the tool calls of a reply
    run in one order, ``inputs`` the run's clock and id."""
    from harnessc.runtime.providers import get_provider

    if steps.base_url is not None:
        from harnessc.runtime.runs.overrides import override_base_url

        override_base_url(options, *steps.base_url)
    if steps.sandbox is not None:
        from harnessc.runtime.runs.overrides import override_sandbox

        override_sandbox(options, steps.sandbox)
    if not isinstance(options.provider, DurableProvider):  # a Claude file's: the parent's
        options.provider = DurableProvider(
            options.provider, lambda model: get_provider(model.api), steps.sink, steps.clock
        )
    options.sequential_tools = True  # steps run in one order, replay after replay
    options.run_inputs = inputs
    return options


class DurableHarness(AgentHarness):
    """A harness whose every tool is a checkpointed step; its sub-agents are durable too."""

    def __init__(self, options: AgentHarnessOptions, steps: RunSteps) -> None:
        self._steps = steps
        options.tools = [self._step(t) for t in options.tools]
        for extension in options.extensions:
            if isinstance(extension, SubAgents):
                extension.runtime = DurableSubAgents(steps)
        super().__init__(options)
        # a workspace checkpoint is a step of the run, recorded with the batch it guards
        checkpoints.use_runner(self._agent, checkpoint_runner(steps.sink, steps.clock))

    def _step(self, tool: AgentTool) -> AgentTool:
        if tool.external or isinstance(tool, DurableTool) or getattr(tool, "steps_inside", False):
            return tool
        return DurableTool(tool, self._steps.sink, self._steps.clock)

    def add_tools(self, tools: Iterable[AgentTool], *, activate: bool = True) -> None:
        super().add_tools([self._step(t) for t in tools], activate=activate)


class DurableSubAgents:
    """The ``SubAgentRuntime`` of a durable run: sub-agents whose sessions replay and
    whose harnesses are durable, on the run's steps."""

    def __init__(self, steps: RunSteps) -> None:
        self.steps = steps

    def _seed(self, key: str) -> str:
        return f"{self.steps.clock.run_id}/{key}"

    def session(self, header: SessionHeader, file: str | None, key: str) -> Session:
        """The hand-over's session: the same header in every execution of the run (its
        file's, once it exists), entries made as the run's own session makes them."""
        seed, clock = self._seed(key), self.steps.clock
        header = msgspec.structs.replace(
            header, id=str(uuid.uuid5(uuid.NAMESPACE_URL, seed)), timestamp=clock.now
        )
        if file is None:
            return DurableSession(
                header=header, entries=[], storage=None, path=None, seed=seed, clock=clock
            )
        from harnessc.runtime.session.storage import JsonlStorage

        if os.path.exists(file):  # an earlier execution of the run made it
            storage, loaded = _open_locked(file)
            replay = ReplayStorage(storage, {e.id for e in loaded.entries})
            return DurableSession(
                header=loaded.header, entries=[], storage=replay, path=file, seed=seed, clock=clock
            )
        created = JsonlStorage.create(file, header)
        return DurableSession(
            header=header, entries=[], storage=created, path=file, seed=seed, clock=clock
        )

    def harness(self, options: AgentHarnessOptions, key: str) -> AgentHarness:
        inputs = SubAgentInputs(self.steps.clock, self._seed(key))
        return DurableHarness(prepare(options, self.steps, inputs), self.steps)

    def remote_steps(self) -> RemoteTaskSteps:
        """A hand-over to a remote A2A agent: its send and its task's end are steps."""
        return RemoteTaskSteps(self.steps.sink, self.steps.clock)


def _open_locked(file: str) -> Any:
    """A sub-agent's session file opened for appending, waiting while another process
    holds it (a worker stalled past its lease: it ends once it finds so, and its lock
    goes with it), as the run's own session is waited for."""
    import time

    from harnessc.runtime.session.lock import SessionLockedError
    from harnessc.runtime.session.storage import JsonlStorage

    while True:
        try:
            return JsonlStorage.open_locked(file)
        except SessionLockedError:
            time.sleep(0.2)
