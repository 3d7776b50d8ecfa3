"""The OpenTelemetry SDK's providers for a TelemetryConfig (imported only when on).

One tracer and one meter provider per (exporter, endpoint, service) and process: every
harness of a many-session process shares them, and the SDK shuts them down (exporting
what is left) when the process exits.
"""

from __future__ import annotations

import sys
import threading
from typing import Any

from harnessc.runtime.telemetry.config import TelemetryConfig

__all__ = ["flush", "providers", "shutdown"]

_LOCK = threading.Lock()
_MADE: dict[tuple[str, str, str], tuple[Any, Any]] = {}
METRIC_INTERVAL_MS = 60_000


def _signal_url(endpoint: str, signal: str) -> str:
    return f"{endpoint.rstrip('/')}/v1/{signal}"


def _make(config: TelemetryConfig) -> tuple[Any, Any]:
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    resource = Resource.create({"service.name": config.service_name or config.agent_name})
    span_exporter: Any
    metric_exporter: Any
    if config.exporter == "console":
        from opentelemetry.sdk.metrics.export import ConsoleMetricExporter
        from opentelemetry.sdk.trace.export import ConsoleSpanExporter

        span_exporter = ConsoleSpanExporter(out=sys.stderr)  # stdout is the agent's
        metric_exporter = ConsoleMetricExporter(out=sys.stderr)
    else:
        from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        endpoint = config.endpoint
        span_exporter = (
            OTLPSpanExporter(endpoint=_signal_url(endpoint, "traces"))
            if endpoint
            else OTLPSpanExporter()
        )
        metric_exporter = (
            OTLPMetricExporter(endpoint=_signal_url(endpoint, "metrics"))
            if endpoint
            else OTLPMetricExporter()
        )
    tracer_provider = TracerProvider(resource=resource)
    tracer_provider.add_span_processor(BatchSpanProcessor(span_exporter))
    reader = PeriodicExportingMetricReader(
        metric_exporter, export_interval_millis=METRIC_INTERVAL_MS
    )
    meter_provider = MeterProvider(resource=resource, metric_readers=[reader])
    return tracer_provider, meter_provider


def providers(config: TelemetryConfig) -> tuple[Any, Any]:
    """``(tracer_provider, meter_provider)`` for ``config`` (the given ones if set)."""
    if config.tracer_provider is not None:
        return config.tracer_provider, config.meter_provider
    key = (str(config.exporter), config.endpoint or "", config.service_name or "")
    with _LOCK:
        made = _MADE.get(key)
        if made is None:
            made = _MADE[key] = _make(config)
    return made


def flush(tracer_provider: Any, meter_provider: Any, timeout_ms: int = 5000) -> None:
    """Export what the providers hold now (blocking; call it from a thread)."""
    for provider in (tracer_provider, meter_provider):
        force = getattr(provider, "force_flush", None)
        if force is not None:
            try:
                force(timeout_millis=timeout_ms)
            except Exception:  # an exporter that cannot reach its endpoint
                pass


def shutdown() -> None:
    """Export what is left and stop every provider made here (the process's exit does
    this by itself; a host that outlives its telemetry endpoint calls it first)."""
    with _LOCK:
        made = list(_MADE.values())
        _MADE.clear()
    for tracer_provider, meter_provider in made:
        for provider in (tracer_provider, meter_provider):
            try:
                provider.shutdown()
            except Exception:
                pass
