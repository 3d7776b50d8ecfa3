"""The pure helpers: SSE framing, tool-argument repair, retry policy, error texts."""

from __future__ import annotations

import time
from email.utils import formatdate

import pytest

from harnessc.runtime.core.options import RetryOptions
from harnessc.runtime.providers import get_provider
from harnessc.runtime.providers.anthropic_messages import AnthropicMessagesProvider
from harnessc.runtime.providers.errors import (
    error_text_from_body,
    is_context_overflow_text,
    redact,
    redact_headers,
)
from harnessc.runtime.providers.google_generative_ai import GoogleGenerativeAIProvider
from harnessc.runtime.providers.http import is_local_url, merge_headers
from harnessc.runtime.providers.openai_completions import OpenAICompletionsProvider
from harnessc.runtime.providers.registry import PROVIDER_FACTORIES
from harnessc.runtime.providers.retry import (
    backoff_delay_ms,
    is_retryable_status,
    parse_retry_after_ms,
    retry_delay_ms,
)
from harnessc.runtime.providers.sse import SSEParser
from harnessc.runtime.providers.tool_args import parse_tool_arguments

STREAM = (
    'event: first\r\ndata: {"a": "h\u00e9llo \u2713"}\r\n\r\n'
    ": keep-alive comment\n\n"
    "data: line one\ndata: line two\n\n"
    "id: 7\nretry: 10\nnonsense without colon\ndata:no-space\n\n"
    "data: [DONE]\n\n"
).encode()
EXPECTED = [
    ("first", '{"a": "h\u00e9llo \u2713"}'),
    ("message", "line one\nline two"),
    ("message", "no-space"),
    ("message", "[DONE]"),
]


@pytest.mark.parametrize("size", [1, 2, 3, 5, 13, len(STREAM)])
def test_sse_parser_any_chunking(size):
    parser = SSEParser()
    out = []
    for i in range(0, len(STREAM), size):
        out.extend(parser.feed(STREAM[i : i + size]))
    out.extend(parser.flush())
    assert out == EXPECTED


def test_sse_flush_emits_unterminated_event():
    parser = SSEParser()
    assert parser.feed(b"data: tail") == []
    assert parser.flush() == [("message", "tail")]
    assert SSEParser().feed_lines(["data: x", ""]) == [("message", "x")]


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ('{"a": 1}', {"a": 1}),
        ("", {}),
        ("   ", {}),
        ('{"a": 1}}', {"a": 1}),
        ('{"a": [1, 2]} ]', {"a": [1, 2]}),
        ('```json\n{"a": "x"}\n```', {"a": "x"}),
        ('{"a": {"b": "c"}', {"a": {"b": "c"}}),
        ('{"a": [1, "two"]', {"a": [1, "two"]}),
        ('{"flag": true', {"flag": True}),
    ],
)
def test_tool_arguments_parse_or_repair(raw, expected):
    assert parse_tool_arguments(raw, "t") == (expected, None)


@pytest.mark.parametrize(
    "raw",
    [
        '{"a": "unterminated',  # cut inside a string
        '{"a": 12',  # a number that may have been longer
        '{"a": ',  # cut after a colon
        '{"a": 1,',  # cut after a comma
        '{"a": 1}{"b": 2}',  # two objects: which one?
        '{"a": 1} trailing words',
        "not json",
        '{"a": 1]',
    ],
)
def test_tool_arguments_ambiguous_give_parse_error(raw):
    arguments, error = parse_tool_arguments(raw, "edit")
    assert arguments == {}
    assert error is not None and "invalid JSON in arguments for tool 'edit'" in error


def test_tool_arguments_must_be_an_object():
    arguments, error = parse_tool_arguments("[1, 2]")
    assert arguments == {} and error == "tool arguments must be a JSON object, got list"


def test_retry_after_forms():
    assert parse_retry_after_ms({"retry-after": "2"}) == 2000
    assert parse_retry_after_ms({"retry-after": "0.5"}) == 500
    assert parse_retry_after_ms({"retry-after-ms": "150", "retry-after": "9"}) == 150
    now = time.time()
    date = formatdate(now + 30, usegmt=True)
    assert 28_000 <= (parse_retry_after_ms({"retry-after": date}, now=now) or 0) <= 31_000
    assert parse_retry_after_ms({"retry-after": formatdate(now - 60, usegmt=True)}) == 0
    assert parse_retry_after_ms({"retry-after": "soon"}) is None
    assert parse_retry_after_ms({}) is None


def test_backoff_and_caps():
    options = RetryOptions(base_delay_ms=2000, multiplier=2.0, jitter=0.0)
    assert [backoff_delay_ms(n, options) for n in (1, 2, 3, 4)] == [2000, 4000, 8000, 16000]
    jittered = RetryOptions(base_delay_ms=1000, jitter=0.2)
    for _ in range(50):
        assert 800 <= backoff_delay_ms(1, jittered) <= 1200
    assert retry_delay_ms(5, options, None, 60_000) == 32_000
    assert retry_delay_ms(6, options, None, 60_000) == 60_000
    assert retry_delay_ms(1, options, 90_000, 60_000) == 60_000
    assert retry_delay_ms(1, options, 0, 60_000) == 0


@pytest.mark.parametrize("status", [408, 409, 429, 500, 502, 503, 529])
def test_retryable_statuses(status):
    assert is_retryable_status(status)


@pytest.mark.parametrize("status", [400, 401, 403, 404, 413, 422])
def test_final_statuses(status):
    assert not is_retryable_status(status)


@pytest.mark.parametrize(
    "text",
    [
        "This model's maximum context length is 128000 tokens",
        "context_length_exceeded",
        "prompt is too long: 201000 tokens > 200000 maximum",
        "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).",
        "Your input exceeds the context window of this model",
        "the request exceeds the available context size, try increasing it",
        "Trying to keep the first 5000 tokens when context the overflows. However, the model is loaded with context length of only 4096 tokens",
    ],
)
def test_context_overflow_texts(text):
    assert is_context_overflow_text(text)


def test_other_errors_are_not_overflow():
    assert not is_context_overflow_text("Rate limit reached for requests")
    assert not is_context_overflow_text("Invalid API key")
    assert not is_context_overflow_text(None)


def test_error_text_from_bodies():
    assert error_text_from_body(
        b'{"error": {"message": "bad", "type": "invalid_request_error"}}'
    ) == ("invalid_request_error: bad")
    google = (
        b'{"error": {"code": 400, "message": "API key not valid", "status": "INVALID_ARGUMENT"}}'
    )
    assert error_text_from_body(google) == "INVALID_ARGUMENT: API key not valid"
    assert error_text_from_body(b'{"detail": "Not Found"}') == "Not Found"
    assert error_text_from_body(b"<html>Bad Gateway</html>") == "Bad Gateway"
    assert error_text_from_body(b"") == ""
    assert error_text_from_body("x" * 5000) == "x" * 500 + "... (4,500 more characters)"


def test_redaction():
    assert redact("key sk-abcdef used", ["sk-abcdef", None]) == "key [redacted] used"
    safe = redact_headers(
        {"Authorization": "Bearer x", "X-Api-Key": "k", "x-goog-api-key": "g", "a": "b"}
    )
    assert safe == {
        "Authorization": "[redacted]",
        "X-Api-Key": "[redacted]",
        "x-goog-api-key": "[redacted]",
        "a": "b",
    }


def test_url_helpers():
    assert is_local_url("http://localhost:11434/v1")
    assert is_local_url("http://127.0.0.1:8000")
    assert not is_local_url("https://api.openai.com/v1")
    assert merge_headers({"A": "1", "b": "2"}, None, {"a": "3"}) == {"a": "3", "b": "2"}


def test_registry_factories():
    assert isinstance(PROVIDER_FACTORIES["openai-completions"](), OpenAICompletionsProvider)
    assert isinstance(PROVIDER_FACTORIES["anthropic-messages"](), AnthropicMessagesProvider)
    assert isinstance(PROVIDER_FACTORIES["google-generative-ai"](), GoogleGenerativeAIProvider)
    assert isinstance(get_provider("openai-completions"), OpenAICompletionsProvider)
