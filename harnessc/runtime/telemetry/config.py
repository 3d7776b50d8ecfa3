"""Telemetry settings: the spec's ``telemetry:`` section and the standard OTEL_* variables.

Reading them imports nothing of OpenTelemetry: an agent without telemetry starts as
fast as one that has never heard of it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal

__all__ = [
    "DEFAULT_OTLP_ENDPOINT",
    "Exporter",
    "TelemetryConfig",
    "exporter_header_secrets",
    "resolve_config",
    "telemetry_requested",
]

Exporter = Literal["otlp", "console", "none"]
DEFAULT_OTLP_ENDPOINT = "http://localhost:4318"  # OTLP over HTTP, the protocol's default
_EXPORTERS = ("otlp", "console", "none")
_MIN_HEADER_SECRET = 8
# the exporter's headers (``key=value,...``, values percent-encoded): its credentials
HEADER_VARIABLES = tuple(
    f"OTEL_EXPORTER_OTLP{part}_HEADERS" for part in ("", "_TRACES", "_METRICS", "_LOGS")
)


@dataclass(slots=True)
class TelemetryConfig:
    """Where traces and metrics go. ``None`` fields are taken from the OTEL_* variables.

    ``exporter``: ``otlp`` (HTTP/protobuf to ``endpoint``), ``console`` (stderr) or
    ``none``. ``service_name``: default the agent's name. ``capture_content``: record
    prompts, replies and tool arguments/results (redacted) on the spans.
    ``tracer_provider`` / ``meter_provider``: OpenTelemetry providers to use instead
    of making them (an application that has its own, or a test's in-memory exporter).
    """

    exporter: Exporter | None = None
    endpoint: str | None = None
    service_name: str | None = None
    capture_content: bool | None = None
    agent_name: str = "agent"
    tracer_provider: Any = None
    meter_provider: Any = None

    @property
    def enabled(self) -> bool:
        return self.exporter != "none" or self.tracer_provider is not None


def _env_exporter(environ: Mapping[str, str]) -> Exporter | None:
    value = environ.get("OTEL_TRACES_EXPORTER", "").strip().lower()
    first = value.split(",", 1)[0].strip()
    if first in _EXPORTERS:
        return first  # type: ignore[return-value]
    return None


def _env_on(environ: Mapping[str, str]) -> bool:
    """The OTEL_* variables ask for telemetry (an exporter or an OTLP endpoint)."""
    return _env_exporter(environ) not in (None, "none") or bool(
        environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
        or environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    )


def telemetry_requested(environ: Mapping[str, str] | None = None) -> bool:
    """The OTEL_* variables turn telemetry on for an agent whose spec has no section."""
    env = os.environ if environ is None else environ
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    return _env_on(env)


def resolve_config(
    config: TelemetryConfig | None, agent_name: str, environ: Mapping[str, str] | None = None
) -> TelemetryConfig | None:
    """The settings in force, or None when telemetry is off.

    Without a spec section, the OTEL_* variables alone turn it on. The spec's values
    win over the variables; ``OTEL_SDK_DISABLED=true`` turns everything off.
    """
    env = os.environ if environ is None else environ
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return None
    if config is None:
        if not _env_on(env):
            return None
        config = TelemetryConfig()
    exporter = config.exporter or _env_exporter(env) or "otlp"
    resolved = replace(
        config,
        exporter=exporter,
        endpoint=config.endpoint or env.get("OTEL_EXPORTER_OTLP_ENDPOINT") or None,
        service_name=config.service_name or env.get("OTEL_SERVICE_NAME") or agent_name,
        capture_content=bool(config.capture_content),
        agent_name=agent_name if config.agent_name == "agent" else config.agent_name,
    )
    return resolved if resolved.enabled else None


def exporter_header_secrets(environ: Mapping[str, str] | None = None) -> list[str]:
    """The values of the OTLP exporter's headers (``OTEL_EXPORTER_OTLP_HEADERS`` and its
    per-signal forms), as written and decoded, and the credential after a scheme
    (``Bearer xyz`` -> ``xyz``), eight characters or longer: never to be shown on a
    span."""
    from urllib.parse import unquote

    env = os.environ if environ is None else environ
    found: list[str] = []
    for variable in HEADER_VARIABLES:
        raw = env.get(variable, "")
        for pair in raw.split(","):
            _, equals, value = pair.partition("=")
            if not equals:
                continue
            for text in (value.strip(), unquote(value).strip()):
                found.append(text)
                scheme, space, credential = text.partition(" ")
                if space and credential.strip():
                    found.append(credential.strip())
    # a short value (x-team=core) is a setting, not a key: redacting it would blank a word
    return [v for v in dict.fromkeys(found) if len(v) >= _MIN_HEADER_SECRET]
