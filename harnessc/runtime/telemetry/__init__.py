"""OpenTelemetry traces and metrics of agent runs (the ``otel`` extra).

Nothing here imports OpenTelemetry until telemetry is on: ``TelemetryConfig`` and the
environment check are plain Python.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harnessc.runtime.support.lazy import lazy_exports

if TYPE_CHECKING:
    from harnessc.runtime.telemetry.config import TelemetryConfig, resolve_config
    from harnessc.runtime.telemetry.extension import TelemetryExtension, install_telemetry

_EXPORTS: dict[str, str] = {
    "TelemetryConfig": "harnessc.runtime.telemetry.config",
    "resolve_config": "harnessc.runtime.telemetry.config",
    "TelemetryExtension": "harnessc.runtime.telemetry.extension",
    "install_telemetry": "harnessc.runtime.telemetry.extension",
}

__all__ = ["TelemetryConfig", "TelemetryExtension", "install_telemetry", "resolve_config"]

__getattr__, __dir__ = lazy_exports(globals(), _EXPORTS, __all__)
