"""The chat-completions body built from kept message encodings (issue 35).

A long session's request encodes only its new messages; the body is byte for byte the
one each API's payload builder makes, however the context changed between requests
(new messages, edits in place, compaction, another branch, another model).
"""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
from msgspec.structs import replace

from harnessc.runtime import AgentHarness, AgentHarnessOptions
from harnessc.runtime.core.hooks import ContextEvent
from harnessc.runtime.core.messages import (
    AssistantMessage,
    CustomMessage,
    ImageContent,
    Message,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from harnessc.runtime.core.options import AgentHarnessStreamOptions, Model
from harnessc.runtime.providers import openai_completions
from harnessc.runtime.providers.anthropic_messages import (
    AnthropicWireCache,
    anthropic_body,
    build_anthropic_payload,
)
from harnessc.runtime.providers.base import Context, ProviderRequest, ToolSpec
from harnessc.runtime.providers.google_generative_ai import (
    GoogleWireCache,
    build_google_payload,
    google_body,
)
from harnessc.runtime.providers.openai_completions import (
    OpenAIWireCache,
    build_openai_payload,
    openai_body,
)
from harnessc.runtime.providers.text import payload_bytes
from harnessc.runtime.tools.base import Tool, ToolResult, text_result
from harnessc.testing import ScriptedResponse, openai_events, openai_tool_call_events

TEXT_MODEL = Model(id="m", api="openai-completions", provider="openai", base_url="http://x/v1")
TOOLS = [ToolSpec("pad", "Pads.", {"type": "object", "properties": {"a": {"type": "integer"}}})]


def _request(
    messages: list[Message], model: Model = TEXT_MODEL, retention: str | None = None
) -> ProviderRequest:
    return ProviderRequest(
        model=model,
        context=Context(system_prompt="You pad.", messages=messages, tools=TOOLS),
        stream_options=AgentHarnessStreamOptions(cache_retention=retention),  # type: ignore[arg-type]
        session_id="s1",
    )


# Each API's body from kept encodings, and the payload it must equal when encoded.
APIS = {
    "openai-completions": (OpenAIWireCache, openai_body, build_openai_payload),
    "anthropic-messages": (AnthropicWireCache, anthropic_body, build_anthropic_payload),
    "google-generative-ai": (GoogleWireCache, google_body, build_google_payload),
}


def _random_message(rng: random.Random, n: int, open_calls: list[str]) -> Message:
    kind = rng.choice(["user", "reply", "calls", "result", "result", "custom", "bad"])
    if kind == "user":
        content: Any = f"question {n} \ud800 é" if rng.random() < 0.1 else f"question {n}"
        if rng.random() < 0.3:
            content = [TextContent(f"part {n}"), ImageContent("aGVsbG8=", "image/png")]
        return UserMessage(content=content)
    if kind == "reply":
        thinking = ThinkingContent("hmm", thinking_signature="sig" if n % 2 else None)
        text = TextContent(f"answer {n}", text_signature="ts" if n % 3 else None)
        return AssistantMessage(
            content=[thinking, text],
            api=rng.choice(sorted(APIS)),
            stop_reason="stop",
        )
    if kind == "calls":
        calls = [
            ToolCall(id=f"c{n}_{i}", name="pad", arguments={"a": n, "deep": {"k": [i]}})
            for i in range(rng.randint(1, 3))
        ]
        open_calls[:] = [c.id for c in calls]
        return AssistantMessage(content=[*calls], stop_reason="toolUse")
    if kind == "result":
        call_id = open_calls.pop(0) if open_calls and rng.random() < 0.8 else f"orphan{n}"
        content = [TextContent(f"result {n}")]
        if rng.random() < 0.3:
            content.append(ImageContent("aW1n", "image/jpeg"))  # type: ignore[arg-type]
        return ToolResultMessage(tool_call_id=call_id, tool_name="pad", content=content)  # type: ignore[arg-type]
    if kind == "custom":
        return CustomMessage(custom_type="note", content=f"note {n}")
    return AssistantMessage(content=[TextContent("partial")], stop_reason="error")


def _edit(rng: random.Random, messages: list[Message]) -> None:
    """Change one message in place, as a context hook may."""
    message = rng.choice(messages)
    if isinstance(message, AssistantMessage):
        calls = message.tool_calls
        if calls and rng.random() < 0.5:
            calls[0].arguments["deep"]["k"].append("edited")  # nested, in place
        elif calls:
            calls[0].id = calls[0].id + "x"
        else:
            message.content.append(TextContent(" more"))
    elif isinstance(message, ToolResultMessage):
        message.content[0] = TextContent("edited result")
    elif isinstance(message, UserMessage | CustomMessage):
        if isinstance(message.content, str):
            message.content = message.content + " edited"
        else:
            first = message.content[0]
            if isinstance(first, TextContent):
                first.text = "edited part"


@pytest.mark.parametrize("api", sorted(APIS))
def test_kept_encodings_give_the_full_body_whatever_changes(api: str) -> None:
    make_cache, body_of, payload_of = APIS[api]
    rng = random.Random(35)
    for _ in range(20):
        cache = make_cache()
        messages: list[Message] = []
        open_calls: list[str] = []
        model = replace(TEXT_MODEL, api=api)
        for step in range(40):
            for _ in range(rng.randint(1, 3)):
                messages.append(_random_message(rng, step, open_calls))
            roll = rng.random()
            if roll < 0.25:
                _edit(rng, messages)
            elif roll < 0.3:  # compaction: a summary and the newest messages (same objects)
                messages = [UserMessage(content="summary"), *messages[-rng.randint(1, 5) :]]
            elif roll < 0.33:  # another branch: an older prefix and new messages
                messages = messages[: rng.randint(0, len(messages))]
            elif roll < 0.36:  # another model: images go through now (or not)
                images = "image" in model.input
                model = replace(model, input=("text",) if images else ("text", "image"))
            retention = rng.choice([None, "none", "long"])
            request = _request(messages, model, retention)
            body = body_of(request, cache)  # type: ignore[operator]
            assert body == payload_bytes(payload_of(request))  # type: ignore[operator]
            json.loads(body)


def test_a_long_sessions_request_encodes_only_its_new_messages(monkeypatch: Any) -> None:
    messages: list[Message] = []
    for n in range(50):
        call = ToolCall(id=f"c{n}", name="pad", arguments={"a": n})
        messages += [
            UserMessage(content=f"q{n}"),
            AssistantMessage(content=[call], stop_reason="toolUse"),
            ToolResultMessage(tool_call_id=f"c{n}", tool_name="pad", content=[TextContent("r")]),
            AssistantMessage(content=[TextContent(f"a{n}")]),
        ]
    provider = openai_completions.OpenAICompletionsProvider()
    provider.build_request(_request(messages), None)
    messages += [
        UserMessage(content="next"),
        AssistantMessage(content=[ToolCall(id="n", name="pad", arguments={"a": 1})]),
    ]
    encoded: list[Any] = []
    real = json.dumps

    def counting(value: Any, *args: Any, **kwargs: Any) -> str:
        encoded.append(value)
        return real(value, *args, **kwargs)

    monkeypatch.setattr(json, "dumps", counting)
    spec = provider.build_request(_request(messages), None)
    # The two new messages, one tool call's arguments, the model and the fields after
    # the messages: not the 200 messages before.
    assert len(encoded) <= 6, len(encoded)
    assert spec.body == payload_bytes(build_openai_payload(_request(messages)))


def test_a_payload_hook_still_sees_and_changes_the_payload() -> None:
    provider = openai_completions.OpenAICompletionsProvider()
    request = _request([UserMessage(content="hi")])

    async def hook(payload: Any) -> Any:
        return payload

    request.on_payload = hook
    spec = provider.build_request(request, None)
    assert spec.body is None and spec.payload == build_openai_payload(request)


def _pad_tool() -> Tool:
    async def run(call_id: str, params: Any, signal: Any, on_update: Any, ctx: Any) -> ToolResult:
        return text_result(f"padded {params['a']}")

    schema = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}
    return Tool("pad", "Pads a number.", schema, run)


def test_a_context_hook_editing_a_message_in_place_reaches_the_model(server: Any) -> None:
    server.enqueue(
        ScriptedResponse.sse(openai_tool_call_events([("call_1", "pad", '{"a": 1}')])),
        ScriptedResponse.sse(openai_events(["done"])),
    )
    model = Model(
        id="local-model",
        api="openai-completions",
        provider="local",
        base_url=server.url + "/v1",
    )
    harness = AgentHarness(
        AgentHarnessOptions(
            models={"main": model}, model="main", tools=[_pad_tool()], system_prompt="Pad."
        )
    )
    steps: list[int] = []

    def edit(event: ContextEvent) -> None:
        steps.append(len(event.messages))
        if len(steps) == 2:  # the second step: the prompt was encoded by the first
            first = event.messages[0]
            assert isinstance(first, UserMessage)
            first.content = "the prompt, as the hook rewrote it"

    harness.on("context", edit)
    result = harness.prompt_sync("the prompt")
    assert result.status == "done"
    first, second = (r.json["messages"] for r in server.requests)
    assert first[1] == {"role": "user", "content": "the prompt"}
    assert second[1] == {"role": "user", "content": "the prompt, as the hook rewrote it"}
    assert second[-1] == {"role": "tool", "tool_call_id": "call_1", "content": "padded 1"}


@pytest.mark.parametrize("api", sorted(APIS))
def test_an_empty_context_without_a_system_prompt(api: str) -> None:
    make_cache, body_of, payload_of = APIS[api]
    request = _request([], replace(TEXT_MODEL, api=api))
    request.context.system_prompt = ""
    body = body_of(request, make_cache())  # type: ignore[operator]
    assert body == payload_bytes(payload_of(request))  # type: ignore[operator]
