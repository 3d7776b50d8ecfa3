"""``TelemetryExtension``: traces and metrics of a harness (the OpenTelemetry SDK is
imported when it is installed, never before)."""

from __future__ import annotations

import asyncio
import weakref
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from harnessc.runtime.telemetry.config import TelemetryConfig, resolve_config, telemetry_requested

if TYPE_CHECKING:
    from harnessc.runtime.options.harness_context import HarnessContext
    from harnessc.runtime.telemetry.spans import RunTracer

__all__ = ["TelemetryExtension", "install_telemetry", "trace_subagent"]

# The tracer listening to each traced harness: one per harness (the spec's and the
# environment's).
_TRACED: weakref.WeakKeyDictionary[HarnessContext, RunTracer] = weakref.WeakKeyDictionary()


class TelemetryExtension:
    """Installed by an agent whose spec has ``telemetry:`` (and, through
    ``install_telemetry``, by any harness when the OTEL_* variables ask for it)."""

    name = "telemetry"
    command_names: tuple[str, ...] = ()

    def __init__(self, config: TelemetryConfig | None = None) -> None:
        self.config = config if config is not None else TelemetryConfig()

    def install(self, harness: HarnessContext) -> None:
        install_telemetry(harness, self.config)


def install_telemetry(harness: HarnessContext, config: TelemetryConfig | None) -> bool:
    """Subscribe a RunTracer to ``harness`` when telemetry is on; True if it did."""
    if harness in _TRACED:
        return False  # once per harness (the spec's and the environment's)
    if config is None and not telemetry_requested():
        return False
    if config is not None:
        name = config.agent_name
    else:  # the OTEL_* variables alone: the name the agent's sessions are made with
        header = getattr(harness.session, "header", None)
        name = str((getattr(header, "metadata", None) or {}).get("agent") or "agent")
    resolved = resolve_config(config, name)
    if resolved is None:
        return False
    from harnessc.runtime.telemetry.setup import flush, providers
    from harnessc.runtime.telemetry.spans import RunTracer

    tracer_provider, meter_provider = providers(resolved)
    tracer = RunTracer(harness, resolved, tracer_provider, meter_provider)
    _TRACED[harness] = tracer
    harness.subscribe(tracer)

    async def export_now() -> None:
        tracer.end_run(**{"harnessc.run.status": "closed"})
        await asyncio.to_thread(flush, tracer_provider, meter_provider)

    harness.on_close(export_now)
    return True


def trace_subagent(
    parent: HarnessContext,
    child: HarnessContext,
    call_id: str,
    tool: str,
    args: Any,
    path: tuple[str, ...],
) -> None:
    """Trace the next run of ``child``, the sub-agent a call of ``parent``'s (``call_id``
    of ``tool``, the hand-over) runs, as a child of that call's span, named after its
    place in the tree (``path``). A sub-agent without telemetry of its own is traced as
    its parent is; nothing happens when the parent is not traced."""
    tracer = _TRACED.get(parent)
    if tracer is None:
        return
    mine = _TRACED.get(child)
    if mine is None:
        from harnessc.runtime.telemetry.spans import RunTracer

        config = replace(tracer.config, agent_name=path[-1])
        mine = RunTracer(child, config, tracer.tracer_provider, tracer.meter_provider)
        _TRACED[child] = mine
        child.subscribe(mine)
        traced = mine

        async def end_run() -> None:
            traced.end_run(**{"harnessc.run.status": "closed"})

        child.on_close(end_run)
    mine.name = path[-1]
    mine.agent_path = " > ".join(path)
    mine.parent = tracer.call_context(call_id, tool, args)
