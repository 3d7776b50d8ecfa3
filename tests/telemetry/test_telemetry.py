"""Traces and metrics of runs, by the GenAI semantic conventions: the SDK's in-memory
exporter for the span tree, a real OTLP/HTTP receiver for a pause resumed in another
process."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from harnessc.runtime import AgentHarness, AgentHarnessOptions, Model
from harnessc.runtime.core.model_options import RetryOptions
from harnessc.runtime.core.options import AgentHarnessStreamOptions
from harnessc.runtime.providers.fallback import ModelFallback
from harnessc.runtime.session import Session
from harnessc.runtime.telemetry import TelemetryConfig, TelemetryExtension, resolve_config
from harnessc.runtime.telemetry.config import exporter_header_secrets
from harnessc.runtime.tools import python_tool
from harnessc.testing import ProtocolServer, ScriptedResponse
from harnessc.testing.streams import openai_events, openai_tool_call_events

from .otlp_receiver import OtlpReceiver, span_attributes

REPO = Path(__file__).resolve().parents[2]
SECRET = "sk-live-telemetry-SECRET-4242"


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def explode(reason: str) -> str:
    """Always fails."""
    raise RuntimeError(f"exploded: {reason}")


class Otel:
    def __init__(self, capture_content: bool = False) -> None:
        self.spans = InMemorySpanExporter()
        tracer_provider = TracerProvider()
        tracer_provider.add_span_processor(SimpleSpanProcessor(self.spans))
        self.metrics = InMemoryMetricReader()
        meter_provider = MeterProvider(metric_readers=[self.metrics])
        self.config = TelemetryConfig(
            agent_name="tester",
            capture_content=capture_content,
            tracer_provider=tracer_provider,
            meter_provider=meter_provider,
        )

    def finished(self):
        return list(self.spans.get_finished_spans())

    def histogram_points(self, name: str):
        data = self.metrics.get_metrics_data()
        out = []
        for resource in data.resource_metrics:
            for scope in resource.scope_metrics:
                for metric in scope.metrics:
                    if metric.name == name:
                        out.extend(metric.data.data_points)
        return out


def _model(server: ProtocolServer, key: str = "m") -> Model:
    return Model(
        id=f"{key}-model",
        api="openai-completions",
        provider="openai",
        base_url=server.url + "/v1",
        api_key_env="TELEMETRY_TEST_KEY",
    )


def _harness(otel: Otel, models: dict[str, Model], **more) -> AgentHarness:
    return AgentHarness(
        AgentHarnessOptions(
            session=Session(),
            models=models,
            tools=[python_tool(add), python_tool(explode)],
            extensions=[TelemetryExtension(otel.config)],
            stream_options=AgentHarnessStreamOptions(max_retries=1),
            retry=RetryOptions(base_delay_ms=1, jitter=0.0),
            **more,
        )
    )


async def _run(harness: AgentHarness, text: str):
    try:
        return await harness.prompt(text)
    finally:
        await harness.close()


@pytest.fixture(autouse=True)
def _key(monkeypatch):
    monkeypatch.setenv("TELEMETRY_TEST_KEY", SECRET)
    for name in [n for n in os.environ if n.startswith("OTEL_")]:
        monkeypatch.delenv(name)


def _tool_reply() -> ScriptedResponse:
    return ScriptedResponse.sse(
        openai_tool_call_events(
            [
                ("call_add", "add", '{"a": 2, "b": 3}'),
                ("call_boom", "explode", json.dumps({"reason": f"key {SECRET}"})),
            ],
            usage=(20, 10, 0),
        )
    )


def test_span_tree_of_a_run_with_tools_and_an_error():
    otel = Otel()
    with ProtocolServer() as server:
        server.enqueue(
            _tool_reply(), ScriptedResponse.sse(openai_events(["done"], usage=(30, 5, 0)))
        )
        harness = _harness(otel, {"m": _model(server)})
        session_id = harness.session.id
        result = asyncio.run(_run(harness, "add and explode"))
    assert result.status == "done"
    spans = otel.finished()
    by_name: dict[str, list] = {}
    for span in spans:
        by_name.setdefault(span.name, []).append(span)
    assert sorted(by_name) == [
        "chat m-model",
        "execute_tool add",
        "execute_tool explode",
        "invoke_agent tester",
    ]
    [run] = by_name["invoke_agent tester"]
    assert run.parent is None
    assert run.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert run.attributes["gen_ai.agent.name"] == "tester"
    assert run.attributes["gen_ai.conversation.id"] == session_id
    assert run.attributes["harnessc.run.status"] == "done"
    assert run.attributes["harnessc.run.id"]
    assert run.attributes["harnessc.budget.tokens"] == 65
    children = [s for s in spans if s is not run]
    assert all(s.parent.span_id == run.context.span_id for s in children)
    assert all(s.context.trace_id == run.context.trace_id for s in children)

    first, second = sorted(by_name["chat m-model"], key=lambda s: s.start_time)
    assert first.attributes["gen_ai.operation.name"] == "chat"
    assert first.attributes["gen_ai.provider.name"] == "openai"
    assert first.attributes["gen_ai.request.model"] == "m-model"
    assert first.attributes["gen_ai.response.model"] == "m-model"
    assert tuple(first.attributes["gen_ai.response.finish_reasons"]) == ("tool_calls",)
    assert (
        first.attributes["gen_ai.usage.input_tokens"],
        first.attributes["gen_ai.usage.output_tokens"],
    ) == (20, 10)
    assert tuple(second.attributes["gen_ai.response.finish_reasons"]) == ("stop",)
    assert first.end_time <= by_name["execute_tool add"][0].start_time

    [ok] = by_name["execute_tool add"]
    assert ok.attributes["gen_ai.tool.name"] == "add"
    assert ok.attributes["gen_ai.tool.call.id"] == "call_add"
    assert ok.status.status_code is StatusCode.UNSET
    [boom] = by_name["execute_tool explode"]
    assert boom.status.status_code is StatusCode.ERROR
    assert boom.attributes["error.type"] == "tool_error"
    # no content without capture_content, and never a secret
    for span in spans:
        assert not any(k.endswith(("messages", "arguments", "result")) for k in span.attributes)
        assert SECRET not in repr(dict(span.attributes)) + repr(span.status.description)

    usage = otel.histogram_points("gen_ai.client.token.usage")
    totals = {}
    for point in usage:
        kind = point.attributes["gen_ai.token.type"]
        totals[kind] = totals.get(kind, 0) + point.sum
        assert point.attributes["gen_ai.request.model"] == "m-model"
    assert totals == {"input": 50, "output": 15}
    [duration] = otel.histogram_points("gen_ai.client.operation.duration")
    assert duration.count == 2 and duration.sum > 0


def test_capture_content_records_prompt_reply_and_tool_arguments_redacted():
    otel = Otel(capture_content=True)
    with ProtocolServer() as server:
        server.enqueue(_tool_reply(), ScriptedResponse.sse(openai_events(["all done"])))
        harness = _harness(otel, {"m": _model(server)})
        asyncio.run(_run(harness, f"please, my key is {SECRET}"))
    spans = {s.name: s for s in otel.finished()}
    run = spans["invoke_agent tester"]
    assert "please, my key is [redacted]" in run.attributes["gen_ai.input.messages"]
    tool = spans["execute_tool explode"]
    assert json.loads(tool.attributes["gen_ai.tool.call.arguments"]) == {"reason": "key [redacted]"}
    assert "5" in spans["execute_tool add"].attributes["gen_ai.tool.call.result"]
    chats = [s for s in otel.finished() if s.name.startswith("chat ")]
    assert any("all done" in s.attributes["gen_ai.output.messages"] for s in chats)
    for span in otel.finished():
        assert SECRET not in repr(dict(span.attributes)) + repr(span.status.description)


def test_a_failed_request_and_a_fallback_are_error_spans():
    otel = Otel()
    with ProtocolServer() as first, ProtocolServer() as second:
        first.enqueue(*(ScriptedResponse.error(500, "broken"),) * 2)
        second.enqueue(ScriptedResponse.sse(openai_events(["from backup"])))
        harness = _harness(
            otel,
            {"main": _model(first, "main"), "backup": _model(second, "backup")},
            model="main",
            fallback=ModelFallback(["backup"]),
        )
        assert asyncio.run(_run(harness, "hi")).text == "from backup"
        first.enqueue(ScriptedResponse.error(400, "bad request"))
        harness = _harness(otel, {"main": _model(first, "main")})
        asyncio.run(_run(harness, "hi"))
    chats = [s for s in otel.finished() if s.name.startswith("chat ")]
    failed = [s for s in chats if s.status.status_code is StatusCode.ERROR]
    assert [(s.name, s.attributes["error.type"]) for s in failed] == [
        ("chat main-model", "server_error"),
        ("chat main-model", "400"),
    ]
    assert [s.name for s in chats if s not in failed] == ["chat backup-model"]
    durations = otel.histogram_points("gen_ai.client.operation.duration")
    assert {p.attributes.get("error.type") for p in durations} == {None, "server_error", "400"}


def test_settings_from_the_environment(monkeypatch):
    assert resolve_config(None, "a", {}) is None
    on = resolve_config(None, "a", {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1"})
    assert on is not None and (on.exporter, on.endpoint, on.service_name) == (
        "otlp",
        "http://127.0.0.1:1",
        "a",
    )
    spec = TelemetryConfig(exporter="console", service_name="svc")
    assert resolve_config(spec, "a", {"OTEL_SDK_DISABLED": "true"}) is None
    assert resolve_config(TelemetryConfig(exporter="none"), "a", {}) is None
    mine = resolve_config(spec, "a", {"OTEL_SERVICE_NAME": "env", "OTEL_TRACES_EXPORTER": "otlp"})
    assert mine is not None and (mine.exporter, mine.service_name) == ("console", "svc")


SCRIPT = r"""
import asyncio, sys
from pathlib import Path
from harnessc.runtime import AgentHarness, AgentHarnessOptions, Model
from harnessc.runtime.core.budget import Budget
from harnessc.runtime.session import JsonlSessionRepo
from harnessc.runtime.telemetry import TelemetryConfig, TelemetryExtension
from harnessc.runtime.tools import python_tool

mode, folder, model_url, otlp = sys.argv[1:]

def add(a: int, b: int) -> int:
    "Add two numbers."
    return a + b

repo = JsonlSessionRepo(folder)
if mode == "start":
    session = repo.create(cwd=folder, metadata={"agent": "pauser"})
else:
    session = repo.open(next(Path(folder).rglob("*.jsonl")))
harness = AgentHarness(AgentHarnessOptions(
    session=session,
    models={"m": Model(id="m-model", api="openai-completions", provider="openai",
                       base_url=model_url + "/v1")},
    tools=[python_tool(add)],
    budget=Budget(turns=1),
    extensions=[TelemetryExtension(TelemetryConfig(exporter="otlp", endpoint=otlp,
                                                   agent_name="pauser"))],
))

async def main():
    try:
        if mode == "start":
            result = await harness.prompt("add 2 and 3")
        else:
            result = await harness.resume(budget=Budget(turns=5))
        print(result.status, result.reason)
    finally:
        await harness.close()

asyncio.run(main())
"""


def test_a_pause_and_its_resume_in_a_new_process_are_linked_spans(tmp_path):
    script = tmp_path / "pauser.py"
    script.write_text(SCRIPT)
    folder = tmp_path / "sessions"
    folder.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env["PYTHONPATH"] = str(REPO)
    with ProtocolServer() as model, OtlpReceiver() as receiver:
        model.enqueue(
            ScriptedResponse.sse(openai_tool_call_events([("call_1", "add", '{"a": 2, "b": 3}')])),
            ScriptedResponse.sse(openai_events(["five"])),
        )
        outputs = []
        for mode in ("start", "resume"):
            done = subprocess.run(
                [sys.executable, str(script), mode, str(folder), model.url, receiver.url],
                env=env,
                capture_output=True,
                text=True,
                timeout=60,
            )
            assert done.returncode == 0, done.stderr
            outputs.append(done.stdout.strip())
        spans = receiver.wait_for_spans(5)
    assert outputs[0].startswith("paused budget_exceeded")
    assert outputs[1].startswith("done")
    runs = [s for _, s in spans if s.name == "invoke_agent pauser"]
    assert len(runs) == 2
    paused, resumed = sorted(runs, key=lambda s: s.start_time_unix_nano)
    paused_attributes = span_attributes(paused)
    assert paused_attributes["harnessc.run.status"] == "paused"
    assert paused_attributes["harnessc.pause.reason"].startswith("budget_exceeded")
    resumed_attributes = span_attributes(resumed)
    assert resumed_attributes["harnessc.run.status"] == "done"
    assert resumed_attributes["harnessc.run.id"] == paused_attributes["harnessc.run.id"]
    assert (
        resumed_attributes["gen_ai.conversation.id"] == paused_attributes["gen_ai.conversation.id"]
    )
    [link] = resumed.links
    assert (link.trace_id, link.span_id) == (paused.trace_id, paused.span_id)
    names = sorted(s.name for _, s in spans)
    assert names == [
        "chat m-model",
        "chat m-model",
        "execute_tool add",
        "invoke_agent pauser",
        "invoke_agent pauser",
    ]
    assert all(resource["service.name"] == "pauser" for resource, _ in spans)


def test_the_otel_variables_alone_turn_it_on(monkeypatch):
    with ProtocolServer() as server, OtlpReceiver() as receiver:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.url)
        monkeypatch.setenv("OTEL_SERVICE_NAME", "from-env")
        server.enqueue(ScriptedResponse.sse(openai_events(["hi"])))
        harness = AgentHarness(AgentHarnessOptions(session=Session(), models={"m": _model(server)}))
        assert asyncio.run(_run(harness, "hello")).status == "done"
        spans = receiver.wait_for_spans(2)
        from harnessc.runtime.telemetry.setup import shutdown

        shutdown()  # while the receiver still answers (else the exit retries the export)
        assert any(m.name == "gen_ai.client.token.usage" for m in receiver.metrics)
    assert sorted(s.name for _, s in spans) == ["chat m-model", "invoke_agent agent"]
    assert {resource["service.name"] for resource, _ in spans} == {"from-env"}


def test_spec_section_compiles_to_the_extension(tmp_path):
    from harnessc.compiler.live import LiveAgent

    spec = tmp_path / "tel.yaml"
    spec.write_text(
        "version: 1\nname: tel\nmodels:\n  m: {provider: openai, id: x, base_url: 'http://127.0.0.1:9/v1'}\n"
        "telemetry: {exporter: console, endpoint: '${TEL_URL:-http://127.0.0.1:4318}', "
        "service_name: svc, capture_content: true}\n"
    )
    live = LiveAgent(str(spec), str(tmp_path / "out"))
    assert live.load()
    options = live.build_options(session=Session(), cwd=str(tmp_path))
    [extension] = [e for e in options.extensions if isinstance(e, TelemetryExtension)]
    config = extension.config
    assert (config.exporter, config.endpoint, config.service_name, config.capture_content) == (
        "console",
        "http://127.0.0.1:4318",
        "svc",
        True,
    )
    assert config.agent_name == "tel"
    spec.write_text(spec.read_text().replace("exporter: console", "exporter: jaeger"))
    assert not live.load()


def _scripted_by_system_prompt(server: ProtocolServer, scripts: dict[str, list[ScriptedResponse]]):
    """Answer each request with the next reply of the agent whose marker its system
    prompt holds (the parent and its sub-agent share one model server)."""

    def answer(request):
        system = " ".join(
            str(m.get("content"))
            for m in request.json["messages"]
            if m["role"] in ("system", "developer")
        )
        for marker, replies in scripts.items():
            if marker in system:
                return replies.pop(0)
        return ScriptedResponse.error(500, "no script")

    server.set_handler(answer)


def _task(call_id: str) -> ScriptedResponse:
    arguments = {"subagent_type": "helper", "description": "add", "prompt": "Add 2 and 3"}
    return ScriptedResponse.sse(
        openai_tool_call_events([(call_id, "task", json.dumps(arguments))], usage=(10, 5, 0))
    )


def _with_helper(otel: Otel, server: ProtocolServer, *tools, built: bool) -> AgentHarness:
    """A parent (``tester``) with a sub-agent (``helper``, as a Claude Code subagent file
    declares one) on its tools and model. ``built``: the sub-agent's options are built
    afresh as a generated module builds them, with a telemetry extension of their own
    (named after the parent); else it runs on the parent's options without extensions."""
    from harnessc.runtime.agent.subagents import SubAgent, SubAgents

    helper = SubAgent(
        name="helper",
        description="Adds numbers.",
        system_prompt="You are HELPER.",
        tools=tuple(t.name for t in tools),
    )

    def build_options(*, session=None, cwd=None, http_clients=None):
        return AgentHarnessOptions(
            session=session or Session(),
            models={"m": _model(server)},
            system_prompt="You are TESTER.",
            tools=list(tools),
            extensions=[
                TelemetryExtension(otel.config),
                SubAgents([helper], agent="tester", build=build_options if built else None),
            ],
            http_clients=http_clients,
        )

    return AgentHarness(build_options())


def _tree(spans) -> dict[int, str]:
    return {s.context.span_id: s.name for s in spans}


def test_a_sub_agents_run_is_a_child_of_its_handover_calls_span():
    otel = Otel()
    with ProtocolServer() as server:
        _scripted_by_system_prompt(
            server,
            {
                "TESTER": [_task("call_task"), ScriptedResponse.sse(openai_events(["done"]))],
                "HELPER": [
                    ScriptedResponse.sse(
                        openai_tool_call_events([("call_add", "add", '{"a": 2, "b": 3}')])
                    ),
                    ScriptedResponse.sse(openai_events(["five"])),
                ],
            },
        )
        harness = _with_helper(otel, server, python_tool(add), built=True)
        result = asyncio.run(_run(harness, "add with help"))
    assert result.status == "done", result
    spans = otel.finished()
    names = _tree(spans)
    parent_of = {s.name: names.get(s.parent.span_id) if s.parent else None for s in spans}
    assert sorted(s.name for s in spans) == [
        "chat m-model",
        "chat m-model",
        "chat m-model",
        "chat m-model",
        "execute_tool add",
        "execute_tool task",
        "invoke_agent helper",
        "invoke_agent tester",
    ]
    assert parent_of["invoke_agent tester"] is None
    assert parent_of["execute_tool task"] == "invoke_agent tester"
    assert parent_of["invoke_agent helper"] == "execute_tool task"
    assert parent_of["execute_tool add"] == "invoke_agent helper"
    [helper] = [s for s in spans if s.name == "invoke_agent helper"]
    helper_chats = [s for s in spans if s.parent and s.parent.span_id == helper.context.span_id]
    assert sorted(s.name for s in helper_chats) == [
        "chat m-model",
        "chat m-model",
        "execute_tool add",
    ]
    assert len({s.context.trace_id for s in spans}) == 1
    assert helper.attributes["gen_ai.agent.name"] == "helper"
    assert helper.attributes["harnessc.agent.path"] == "tester > helper"
    assert helper.attributes["harnessc.run.status"] == "done"
    # the run's span holds the tree's usage: the total is the sum of the agents'
    [tester] = [s for s in spans if s.name == "invoke_agent tester"]
    agents = json.loads(tester.attributes["harnessc.tree.agents"])
    assert set(agents) == {"tester", "tester > helper"}
    assert agents["tester > helper"]["tool_calls"] == 1
    for key in ("turns", "tool_calls", "input_tokens", "output_tokens"):
        assert tester.attributes[f"harnessc.tree.{key}"] == sum(a[key] for a in agents.values())
    assert tester.attributes["harnessc.tree.turns"] == 4


def test_a_sub_agent_resumed_after_a_pause_is_nested_in_the_resumed_run():
    from harnessc.runtime.tools import ExternalTool

    otel = Otel()
    approve = ExternalTool(name="approve", description="Ask a human.")
    with ProtocolServer() as server:
        _scripted_by_system_prompt(
            server,
            {
                "TESTER": [_task("call_task"), ScriptedResponse.sse(openai_events(["done"]))],
                "HELPER": [
                    ScriptedResponse.sse(openai_tool_call_events([("x1", "approve", "{}")])),
                    ScriptedResponse.sse(openai_events(["approved"])),
                ],
            },
        )
        harness = _with_helper(otel, server, approve, built=False)

        async def main():
            try:
                paused = await harness.prompt("do it")
                assert paused.status == "paused", paused
                return await harness.resume({"x1": "yes"})
            finally:
                await harness.close()

        result = asyncio.run(main())
    assert result.status == "done", result
    spans = otel.finished()
    by_id = {s.context.span_id: s for s in spans}
    runs = sorted((s for s in spans if s.name == "invoke_agent tester"), key=lambda s: s.start_time)
    helpers = sorted(
        (s for s in spans if s.name == "invoke_agent helper"), key=lambda s: s.start_time
    )
    assert len(runs) == 2 and len(helpers) == 2
    for run, helper in zip(runs, helpers, strict=True):
        handover = by_id[helper.parent.span_id]
        assert handover.name == "execute_tool task"
        assert handover.attributes["gen_ai.tool.call.id"] == "call_task"
        assert handover.parent.span_id == run.context.span_id
    assert helpers[0].attributes["harnessc.run.status"] == "paused"
    assert helpers[1].attributes["harnessc.run.status"] == "done"


def test_the_otlp_headers_token_never_reaches_a_span(monkeypatch):
    """OTEL_EXPORTER_OTLP_HEADERS holds the exporter's credential (percent-encoded, as
    the specification writes it): with content capture on, a prompt or a tool argument
    quoting it is redacted like a model's key."""
    token = "otlp-TOKEN-abc123456"
    trace_key = "trace-KEY-998877"
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", f"Authorization=Bearer%20{token},x-team=core")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_HEADERS", f"x-api-key={trace_key}")
    otel = Otel(capture_content=True)
    with ProtocolServer() as server:
        server.enqueue(
            ScriptedResponse.sse(
                openai_tool_call_events(
                    [("c1", "explode", json.dumps({"reason": f"{token} and {trace_key}"}))]
                )
            ),
            ScriptedResponse.sse(openai_events([f"echo {token}"])),
        )
        harness = _harness(otel, {"m": _model(server)})
        asyncio.run(_run(harness, f"the exporter uses Bearer {token} and {trace_key}"))
    spans = otel.finished()
    assert spans
    for span in spans:
        shown = repr(dict(span.attributes)) + repr(span.status.description)
        assert token not in shown and trace_key not in shown, shown
    run = next(s for s in spans if s.name == "invoke_agent tester")
    assert "the exporter uses [redacted] and [redacted]" in run.attributes["gen_ai.input.messages"]
    assert exporter_header_secrets() == [
        f"Bearer%20{token}",
        f"Bearer {token}",
        token,
        trace_key,
    ]  # x-team=core is a setting: "core" stays readable
