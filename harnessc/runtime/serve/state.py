"""What every endpoint shares: the configuration, the agent and its runs."""

from __future__ import annotations

from dataclasses import dataclass, field

from harnessc.runtime.serve.config import ServeConfig
from harnessc.runtime.serve.harnesses import AgentSource
from harnessc.runtime.serve.runs import RunRegistry

__all__ = ["ServeState"]


@dataclass(slots=True)
class ServeState:
    config: ServeConfig
    source: AgentSource
    runs: RunRegistry
    base_url: str = ""  # http://host:port as clients reach the server (the agent card)
    # AG-UI thread ids and A2A context ids -> the session each started
    threads: dict[str, str] = field(default_factory=dict)
    # AG-UI thread ids and A2A context ids -> their latest run (durable runs have no
    # session to go on in)
    thread_runs: dict[str, str] = field(default_factory=dict)
