"""Failures say what the server said and what to check, never leak a secret, and text
that UTF-8 cannot encode never breaks a request (issue 15 items 1, 10, 13, 15; issue
17 item 7)."""

from __future__ import annotations

import asyncio
import json
import socket
from pathlib import Path

import aiohttp
import pytest
from aiohttp.client_reqrep import ConnectionKey

from harnessc.runtime import AgentHarness, AgentHarnessOptions, Model
from harnessc.runtime.core.messages import AssistantMessage, TextContent, UserMessage
from harnessc.runtime.providers.base import ProviderRetry
from harnessc.runtime.providers.errors import error_text_from_body, redact, redact_url
from harnessc.runtime.providers.hints import describe_transport_error
from harnessc.runtime.providers.openai_completions import OpenAICompletionsProvider
from harnessc.runtime.providers.sse import SSEParser
from harnessc.testing import ProtocolServer, ScriptedResponse, openai_events

from .conftest import API_KEY, Collect, MakeRequest


def _model(server: ProtocolServer, base: str | None = None, **fields: object) -> Model:
    values: dict[str, object] = {
        "id": "test-model",
        "api": "openai-completions",
        "base_url": base or server.url + "/v1",
        "api_key_env": "HARNESSC_TEST_KEY",
    }
    values.update(fields)
    return Model(**values)  # type: ignore[arg-type]


def _retries(request: object) -> list[ProviderRetry]:
    seen: list[ProviderRetry] = []

    async def on_retry(retry: ProviderRetry) -> None:
        seen.append(retry)

    request.on_retry = on_retry  # type: ignore[attr-defined]
    return seen


# -- item 1: lone surrogates ----------------------------------------------------------


def test_lone_surrogates_in_the_context_do_not_break_the_payload(
    server: ProtocolServer, make_request: MakeRequest, collect: Collect
):
    server.enqueue(ScriptedResponse.sse(openai_events(["read it"])))
    messages = [
        UserMessage("review: caf\udce9"),  # a Latin-1 byte through surrogateescape
        AssistantMessage(content=[TextContent("half an emoji \ud83d")]),
        UserMessage("a whole one \ud83d\ude00"),
    ]
    events = collect(OpenAICompletionsProvider(), make_request(_model(server), messages))
    assert events[-1].type == "done", events[-1].partial.error_message
    sent = server.requests[0].body.decode("utf-8")
    assert "caf\ufffd" in sent and "half an emoji \ufffd" in sent
    assert "a whole one \U0001f600" in sent


def test_a_session_holding_lone_surrogates_continues(server: ProtocolServer, tmp_path: Path):
    """Before: every --continue of such a session failed with "payload is not valid JSON"."""
    from harnessc.runtime.session import JsonlSessionRepo

    repo = JsonlSessionRepo(tmp_path / "sessions")
    server.enqueue(
        ScriptedResponse.sse(openai_events(["seen"])),
        ScriptedResponse.sse(openai_events(["reviewed"])),
    )

    async def run(session: object, text: str) -> tuple[str, str]:
        harness = AgentHarness(
            AgentHarnessOptions(session=session, models={"main": _model(server)})
        )
        result = await harness.prompt(text)
        await harness.close()
        return result.status, result.text

    session = repo.create(cwd=str(tmp_path))
    path = Path(session.path)
    assert asyncio.run(run(session, "git diff of MARKER.txt")) == ("done", "seen")
    # the file as an older version wrote it: a lone surrogate escape in a message
    path.write_text(path.read_text("utf-8").replace("MARKER", "caf\\udce9"), "utf-8")
    assert asyncio.run(run(repo.open(str(path)), "continue")) == ("done", "reviewed")
    assert "caf\ufffd.txt" in server.requests[1].body.decode("utf-8")


# -- item 10: secrets -----------------------------------------------------------------


def test_a_key_straddling_the_cut_is_redacted_whole(
    server: ProtocolServer, make_request: MakeRequest, collect: Collect
):
    """Before: the error text was cut at 2,000 characters, then redacted, so the first
    characters of a key that straddled the cut stayed."""
    text = "x" * 1983 + API_KEY + " and more"  # the key starts 10 characters before the cut
    server.enqueue(ScriptedResponse.error(400, text))
    events = collect(OpenAICompletionsProvider(), make_request(_model(server)))
    message = events[-1].partial.error_message or ""
    assert "sk-" not in message and message.startswith("HTTP 400: error: xxxxxxxxxx")
    assert error_text_from_body(text, secrets=[API_KEY]).count("sk-") == 0


def test_url_user_info_never_reaches_messages(
    server: ProtocolServer, make_request: MakeRequest, collect: Collect
):
    password = "hunter2-PW-77"
    base = server.url.replace("http://", f"http://alice:{password}@") + "/v1"
    server.enqueue(
        ScriptedResponse.error(503, f"upstream {base} busy"),
        ScriptedResponse.error(400, f"bad request for {password}"),
    )
    request = make_request(_model(server, base), max_retries=2)
    retries = _retries(request)
    events = collect(OpenAICompletionsProvider(), request)
    final = events[-1].partial
    shown = [r.error for r in retries] + [final.error_message or "", json.dumps(final.to_dict())]
    assert retries and all(password not in text and "alice" not in text for text in shown)
    assert redact_url("https://bob:pw@example.com/v1") == "https://[redacted]@example.com/v1"
    assert redact("see http://u:p@h:1/x", []) == "see http://[redacted]@h:1/x"


def test_one_url_redaction_hides_user_info_and_query_values() -> None:
    """Every URL shown (errors, doctor, the PostgreSQL and durable messages) goes through
    one redaction: a key may be in the query string as well as in the user info."""
    from harnessc.runtime.session.postgres_storage import redact_url as storage_redact

    assert storage_redact is redact_url
    assert (
        redact_url("https://gw.example/v1?key=sk-123&api-version=2024-06-01&token=t")
        == "https://gw.example/v1?key=[redacted]&api-version=2024-06-01&token=[redacted]"
    )
    assert (
        redact_url("cannot reach postgresql://me:pw@db:5432/app?sslmode=require, retrying")
        == "cannot reach postgresql://[redacted]@db:5432/app?sslmode=require, retrying"
    )
    assert redact_url("no url here: key=1") == "no url here: key=1"


# -- item 13 and issue 17 item 7: the server's message and what to check --------------


def test_retry_lines_do_not_repeat_the_status(
    server: ProtocolServer, make_request: MakeRequest, collect: Collect
):
    server.enqueue(
        ScriptedResponse.error(429, "rate limited", headers={"retry-after-ms": "1"}),
        ScriptedResponse.sse(openai_events(["ok"])),
    )
    request = make_request(_model(server))
    retries = _retries(request)
    collect(OpenAICompletionsProvider(), request)
    assert [(r.status, r.error) for r in retries] == [(429, "error: rate limited")]


@pytest.mark.parametrize(
    ("status", "hint"),
    [
        (401, "(check HARNESSC_TEST_KEY (the API key for model 'test-model'))"),
        (404, "(check that base_url ends with /v1 and the model id 'test-model')"),
        (501, "(check that base_url ends with /v1 and the model id 'test-model')"),
    ],
)
def test_status_errors_say_what_to_check(
    server: ProtocolServer, make_request: MakeRequest, collect: Collect, status: int, hint: str
):
    server.enqueue(ScriptedResponse.error(status, "nope"), ScriptedResponse.error(status, "x"))
    request = make_request(_model(server), max_retries=2)
    retries = _retries(request)
    events = collect(OpenAICompletionsProvider(), request)
    assert events[-1].partial.error_message == f"HTTP {status}: error: nope {hint}"
    assert retries == [] and len(server.requests) == 1  # none of these passes by itself


def test_dns_failure_and_refused_are_named_and_not_retried(make_request, collect):
    # No test asks a name server: the resolver's failure as aiohttp raises it.
    key = ConnectionKey("nohost.invalid", 80, False, True, None, None, None)
    gai = socket.gaierror(-2, "Name or service not known")
    message, retryable = describe_transport_error(
        aiohttp.ClientConnectorDNSError(key, gai), None, "http://nohost.invalid/v1/x"
    )
    assert message == (
        "cannot resolve the host name 'nohost.invalid' (http://nohost.invalid/v1/x): "
        "check base_url and the network"
    )
    assert not retryable
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    model = Model(id="m", api="openai-completions", base_url=f"http://u:p@127.0.0.1:{port}/v1")
    request = make_request(model, max_retries=2)
    retries = _retries(request)
    events = collect(OpenAICompletionsProvider(), request)
    assert events[-1].partial.error_message == (
        f"connection refused (http://127.0.0.1:{port}/v1/chat/completions): "
        f"is the server running at http://127.0.0.1:{port}?"
    )
    assert retries == []


def test_a_huge_html_error_page_is_cut(
    server: ProtocolServer, make_request: MakeRequest, collect: Collect
):
    page = "<html><head><title>502 Bad Gateway</title></head><body>" + "<p>x</p>" * 50_000
    server.enqueue(ScriptedResponse(status=502, chunks=[page.encode()], content_type="text/html"))
    events = collect(OpenAICompletionsProvider(), make_request(_model(server), max_retries=0))
    message = events[-1].partial.error_message or ""
    assert message.startswith("HTTP 502: 502 Bad Gateway: x x x")
    assert len(message) < 700 and "<p>" not in message


# -- the SSE decoder (item 4) ---------------------------------------------------------


def test_sse_line_endings_bom_and_unicode_line_separators():
    parser = SSEParser()
    events = parser.feed(b"\xef\xbb\xbfdata: a\rdata: b\r")
    events += parser.feed(b"\n\r\n")  # the LF pairs with the CR before it: one blank line
    events += parser.feed("data: x\u2028y\x85z\r\n\r\nevent: e\ndata: 1\n\n".encode())
    assert events == [("message", "a\nb"), ("message", "x\u2028y\x85z"), ("e", "1")]


def test_sse_line_cap_names_the_limit():
    parser = SSEParser(max_line=1000)
    parser.feed(b"data: " + b"x" * 600)
    with pytest.raises(Exception) as info:
        parser.feed(b"x" * 600)
    assert "longer than the limit of 1,000 characters" in str(info.value)
    parser = SSEParser(max_event=1000)
    with pytest.raises(Exception) as info:
        parser.feed(b"data: " + b"y" * 600 + b"\ndata: " + b"y" * 600 + b"\n")
    assert "an event longer than the limit" in str(info.value)


def test_sse_a_long_line_in_small_chunks_is_joined_once():
    parser = SSEParser()
    line = b"data: " + b"z" * 2_000_000 + b"\n\n"
    events = []
    for start in range(0, len(line), 1000):
        events += parser.feed(line[start : start + 1000])
    assert events == [("message", "z" * 2_000_000)]
