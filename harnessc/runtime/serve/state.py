"""What every endpoint shares: the configuration and the agent's runs."""

from __future__ import annotations

from dataclasses import dataclass, field

from harnessc.runtime.runs.agent import AgentSource
from harnessc.runtime.runs.control import RunControl
from harnessc.runtime.serve.config import ServeConfig

__all__ = ["ServeState"]


@dataclass(slots=True)
class ServeState:
    config: ServeConfig
    runs: RunControl  # plain or durable: every endpoint goes through it only
    base_url: str = ""  # http://host:port as clients reach the server (the agent card)
    # AG-UI thread ids and A2A context ids -> the session each started
    threads: dict[str, str] = field(default_factory=dict)
    # AG-UI thread ids and A2A context ids -> their latest run (a run of a session in
    # memory, or a durable run, has no stored session to find it through)
    thread_runs: dict[str, str] = field(default_factory=dict)

    @property
    def source(self) -> AgentSource:
        return self.runs.source
