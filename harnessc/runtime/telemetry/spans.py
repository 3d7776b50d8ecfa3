"""The harness's events as OpenTelemetry spans and metrics (GenAI semantic conventions).

One ``invoke_agent {name}`` span per run, with a ``chat {model}`` span per model request
and an ``execute_tool {tool}`` span per tool call inside it; a sub-agent's run is a child
of its hand-over call's ``execute_tool task`` span. A pause ends the run's span
(``harnessc.pause.reason``) and records its span context in the session; the resumed
run, in this process or another, is a new span linked to it. Prompts, replies and tool
arguments/results are recorded only with ``capture_content``, secrets redacted.
"""

from __future__ import annotations

import json
import logging
import os
import re
import time
from typing import TYPE_CHECKING, Any

from opentelemetry import metrics, trace
from opentelemetry.trace import Link, SpanContext, SpanKind, Status, StatusCode, TraceFlags

from harnessc.runtime.providers.errors import redact
from harnessc.runtime.support.secrets import (
    is_credential_name,
    registered_secret_names,
    registered_secret_values,
)
from harnessc.runtime.telemetry.config import TelemetryConfig, exporter_header_secrets

if TYPE_CHECKING:
    from harnessc.runtime.options.harness_context import HarnessContext

__all__ = ["SESSION_RECORD", "RunTracer"]

log = logging.getLogger(__name__)

SESSION_RECORD = "harnessc.telemetry"  # custom session entry: a paused run's span
_HTTP_STATUS = re.compile(r"\bHTTP (\d{3})\b")
_TOKEN_BUCKETS = [1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304]
_DURATION_BUCKETS = [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48]
_FINISH = {"stop": "stop", "length": "length", "toolUse": "tool_calls", "error": "error"}
_MAX_CONTENT = 16_000


def _error_type(text: str | None) -> str:
    """A low-cardinality error.type for a failed reply: the HTTP status, else a kind."""
    found = _HTTP_STATUS.search(text or "")
    return found.group(1) if found else "provider_error"


class RunTracer:
    """A harness subscriber; ``harness`` is the AgentHarness it listens to."""

    def __init__(
        self,
        harness: HarnessContext,
        config: TelemetryConfig,
        tracer_provider: Any,
        meter_provider: Any,
    ) -> None:
        self.harness = harness
        self.config = config
        self.name = config.agent_name
        self.tracer_provider = tracer_provider
        self.meter_provider = meter_provider
        self.tracer = trace.get_tracer("harnessc", tracer_provider=tracer_provider)
        meter = metrics.get_meter("harnessc", meter_provider=meter_provider)
        self.token_usage = meter.create_histogram(
            "gen_ai.client.token.usage",
            unit="{token}",
            description="Tokens used per model request",
            explicit_bucket_boundaries_advisory=_TOKEN_BUCKETS,
        )
        self.duration = meter.create_histogram(
            "gen_ai.client.operation.duration",
            unit="s",
            description="Duration of model requests",
            explicit_bucket_boundaries_advisory=_DURATION_BUCKETS,
        )
        self.run_span: Any = None
        self.run_context: Any = None
        self.run_id = ""
        self.tool_spans: dict[str, Any] = {}
        self.request_started_ns = time.time_ns()
        self.paused: dict[str, SpanContext] = {}  # run id -> its last span (this process)
        # A sub-agent's: its agent path, and the context its runs' spans start in (its
        # hand-over call's span; set by ``trace_subagent`` before each of its runs).
        self.agent_path = ""
        self.parent: Any = None

    # -- dispatch ----------------------------------------------------------------------

    def __call__(self, event: Any) -> None:
        handler = getattr(self, "_on_" + event.type, None)
        if handler is None:
            return
        try:
            handler(event)
        except Exception:  # telemetry never breaks a run
            log.exception("telemetry: %s event not recorded", event.type)

    # -- helpers -----------------------------------------------------------------------

    def _secrets(self) -> list[str]:
        names = set(registered_secret_names())
        names.update(n for n in os.environ if is_credential_name(n))
        values = [os.environ.get(n, "") for n in names]
        values += registered_secret_values()  # tokens of MCP servers
        values += exporter_header_secrets()  # the exporter's own credential
        for model in self.harness.models.values():
            key = model.api_key()
            if key:
                values.append(key)
        return sorted({v for v in values if len(v) >= 4}, key=len, reverse=True)

    def _content(self, value: Any) -> str:
        text = value if isinstance(value, str) else json.dumps(value, default=str)
        text = redact(text, self._secrets())
        return text if len(text) <= _MAX_CONTENT else text[:_MAX_CONTENT] + "..."

    def _usage_attributes(self) -> dict[str, Any]:
        usage = self.harness.budget.usage
        out: dict[str, Any] = {}
        for name in ("turns", "tool_calls", "tokens", "cost_usd", "wall_clock_s"):
            value = getattr(usage, name, None)
            if isinstance(value, int | float):
                out[f"harnessc.budget.{name}"] = value
        return out

    def _start_run(self, run_id: str, *, resumed: str = "", prompt: str = "") -> None:
        self.end_run()  # a run never ended (a crash of its own) is closed first
        model = self.harness.model
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": self.name,
            "gen_ai.conversation.id": self.harness.session.id,
            "gen_ai.provider.name": model.provider or model.api,
            "gen_ai.request.model": model.id,
            "harnessc.run.id": run_id,
        }
        if self.agent_path:
            attributes["harnessc.agent.path"] = self.agent_path
        links = []
        if resumed:
            attributes["harnessc.resume.reason"] = resumed
            earlier = self.paused.get(run_id) or self._recorded_span(run_id)
            if earlier is not None:
                links.append(Link(earlier, {"harnessc.link": "resumed_from"}))
        if prompt and self.config.capture_content:
            attributes["gen_ai.input.messages"] = self._content(
                [{"role": "user", "parts": [{"type": "text", "content": prompt}]}]
            )
        self.run_span = self.tracer.start_span(
            f"invoke_agent {self.name}",
            context=self.parent,
            kind=SpanKind.INTERNAL,
            attributes=attributes,
            links=links,
        )
        self.run_context = trace.set_span_in_context(self.run_span)
        self.run_id = run_id
        self.request_started_ns = time.time_ns()

    def _recorded_span(self, run_id: str) -> SpanContext | None:
        """The span a paused run recorded in the session (another process's)."""
        for entry in reversed(self.harness.session.entries()):
            if entry.type != "custom" or entry.data.get("customType") != SESSION_RECORD:
                continue
            data = entry.data.get("data") or {}
            if data.get("run_id") != run_id:
                continue
            try:
                return SpanContext(
                    trace_id=int(data["trace_id"], 16),
                    span_id=int(data["span_id"], 16),
                    is_remote=True,
                    trace_flags=TraceFlags(TraceFlags.SAMPLED),
                )
            except (KeyError, TypeError, ValueError):
                return None
        return None

    def end_run(self, **attributes: Any) -> None:
        span, self.run_span = self.run_span, None
        if span is None:
            return
        for call_id in list(self.tool_spans):
            self.tool_spans.pop(call_id).end()
        span.set_attributes({**self._usage_attributes(), **attributes})
        span.end()

    # -- runs --------------------------------------------------------------------------

    def _on_agent_start(self, event: Any) -> None:
        self._start_run(event.run_id, prompt=event.prompt)

    def _on_agent_resume(self, event: Any) -> None:
        self._start_run(event.run_id, resumed=event.reason or "resumed")

    def _on_agent_pause(self, event: Any) -> None:
        span = self.run_span
        if span is None:
            return
        context = span.get_span_context()
        self.paused[event.run_id] = context
        try:
            self.harness.session.append_custom(
                SESSION_RECORD,
                {
                    "run_id": event.run_id,
                    "trace_id": format(context.trace_id, "032x"),
                    "span_id": format(context.span_id, "016x"),
                },
            )
        except Exception:  # a session that cannot be written still gets its span
            log.exception("telemetry: the paused run's span not recorded in the session")
        self.end_run(**{"harnessc.run.status": "paused", "harnessc.pause.reason": event.reason})

    def _on_agent_end(self, event: Any) -> None:
        span = self.run_span
        if span is None:
            return
        if event.status == "error":
            span.set_status(Status(StatusCode.ERROR, self._content(event.reason)))
            span.set_attribute("error.type", "agent_error")
        self.end_run(**{"harnessc.run.status": event.status, **_tree_attributes(event)})

    # -- model requests ----------------------------------------------------------------

    def _on_turn_start(self, event: Any) -> None:
        self.request_started_ns = time.time_ns()

    def _chat_span(
        self, provider: str, model: str, start_ns: int, attributes: dict[str, Any]
    ) -> Any:
        return self.tracer.start_span(
            f"chat {model}",
            context=self.run_context,
            kind=SpanKind.CLIENT,
            start_time=start_ns,
            attributes={
                "gen_ai.operation.name": "chat",
                "gen_ai.provider.name": provider,
                "gen_ai.request.model": model,
                "gen_ai.conversation.id": self.harness.session.id,
                **attributes,
            },
        )

    def _record_duration(self, start_ns: int, end_ns: int, attributes: dict[str, Any]) -> None:
        self.duration.record(max(0, end_ns - start_ns) / 1e9, attributes)

    def _on_message_end(self, event: Any) -> None:
        message = event.message
        if message is None or getattr(message, "role", "") != "assistant":
            return
        if self.run_span is None:
            return
        start_ns, end_ns = self.request_started_ns, time.time_ns()
        usage = message.usage
        provider = message.provider or message.api
        attributes: dict[str, Any] = {
            "gen_ai.response.model": message.model,
            "gen_ai.response.finish_reasons": [
                _FINISH.get(message.stop_reason, message.stop_reason)
            ],
            "gen_ai.usage.input_tokens": usage.input,
            "gen_ai.usage.output_tokens": usage.output,
            "gen_ai.usage.cache_read.input_tokens": usage.cache_read,
            "gen_ai.usage.cache_creation.input_tokens": usage.cache_write,
            "harnessc.cost_usd": usage.cost.total,
        }
        if self.config.capture_content:
            attributes["gen_ai.output.messages"] = self._content(
                [{"role": "assistant", "parts": [c.to_dict() for c in message.content]}]
            )
        span = self._chat_span(provider, message.model, start_ns, attributes)
        metric = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": provider,
            "gen_ai.request.model": message.model,
            "gen_ai.response.model": message.model,
        }
        if message.stop_reason in ("error", "aborted"):
            kind = (
                "aborted"
                if message.stop_reason == "aborted"
                else _error_type(message.error_message)
            )
            span.set_status(Status(StatusCode.ERROR, self._content(message.error_message or kind)))
            span.set_attribute("error.type", kind)
            metric["error.type"] = kind
        span.end(end_time=end_ns)
        self._record_duration(start_ns, end_ns, metric)
        for kind, count in (("input", usage.input), ("output", usage.output)):
            if count:
                self.token_usage.record(count, {**metric, "gen_ai.token.type": kind})
        self.request_started_ns = end_ns

    def _on_model_fallback(self, event: Any) -> None:
        """The failed request, as an error span of the model that failed."""
        if self.run_span is None:
            return
        model = self.harness.models.get(event.from_model)
        model_id = model.id if model is not None else event.from_model
        provider = (model.provider or model.api) if model is not None else ""
        start_ns, end_ns = self.request_started_ns, time.time_ns()
        span = self._chat_span(
            provider, model_id, start_ns, {"harnessc.fallback.to": event.to_model}
        )
        span.set_status(Status(StatusCode.ERROR, self._content(event.error)))
        span.set_attribute("error.type", event.reason)
        span.end(end_time=end_ns)
        self._record_duration(
            start_ns,
            end_ns,
            {
                "gen_ai.operation.name": "chat",
                "gen_ai.provider.name": provider,
                "gen_ai.request.model": model_id,
                "error.type": event.reason,
            },
        )
        self.request_started_ns = end_ns

    # -- tools -------------------------------------------------------------------------

    def _on_tool_execution_start(self, event: Any) -> None:
        if self.run_span is None:
            return
        self._tool_span(event.tool_call_id, event.tool_name, event.args)

    def _tool_span(self, call_id: str, tool: str, args: Any, **more: Any) -> Any:
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": tool,
            "gen_ai.tool.call.id": call_id,
            "gen_ai.tool.type": "function",
            **more,
        }
        if self.config.capture_content:
            attributes["gen_ai.tool.call.arguments"] = self._content(args)
        span = self.tool_spans[call_id] = self.tracer.start_span(
            f"execute_tool {tool}",
            context=self.run_context,
            kind=SpanKind.INTERNAL,
            attributes=attributes,
        )
        return span

    def call_context(self, call_id: str, tool: str, args: Any) -> Any:
        """The context of the open run's span of the call ``call_id`` (a sub-agent's runs
        start in it). A call held across a pause had its span end with the paused run:
        resumed, it gets a new one in the resumed run. None when no run is open."""
        if self.run_span is None:
            return None
        span = self.tool_spans.get(call_id)
        if span is None:
            span = self._tool_span(call_id, tool, args, **{"harnessc.tool.resumed": True})
        return trace.set_span_in_context(span)

    def _on_tool_execution_end(self, event: Any) -> None:
        span = self.tool_spans.pop(event.tool_call_id, None)
        if span is None:
            return
        result = event.result
        if event.is_error:
            text = "".join(getattr(c, "text", "") for c in (result.content if result else []))
            span.set_status(Status(StatusCode.ERROR, self._content(text or "tool failed")))
            span.set_attribute("error.type", "tool_error")
        if self.config.capture_content and result is not None:
            span.set_attribute(
                "gen_ai.tool.call.result",
                self._content([c.to_dict() for c in result.content]),
            )
        span.end()
        self.request_started_ns = time.time_ns()


def _tree_attributes(event: Any) -> dict[str, Any]:
    """The run's tree usage (``agent_end``'s): its total as ``harnessc.tree.*`` and
    each agent's figures by path as JSON in ``harnessc.tree.agents``."""
    usage = getattr(event, "usage", None)
    if not isinstance(usage, dict):
        return {}
    out: dict[str, Any] = {
        f"harnessc.tree.{key}": value
        for key, value in (usage.get("total") or {}).items()
        if isinstance(value, int | float)
    }
    out["harnessc.tree.agents"] = json.dumps(usage.get("agents") or {}, sort_keys=True)
    return out
