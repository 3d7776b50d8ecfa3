"""A typed served agent for the issue-40 tests: its own scripted model (answers from the
conversation, so many runs share it), a spec with ``output:`` (a final_result tool),
a bash tool behind an ``ask``, a budget, an external tool, and a second spec (no typed
output, ``default: ask``, a hook that makes a finished reply go on once).

The model: ``call NAME {json}`` in the last user message -> that tool call; a tool
result last -> the typed value (a final_result call) when the request offers
final_result, else ``done: <result>``; ``verdict`` -> the typed value at once; ``twice``
-> ``echo: twice`` (the hook answers "finally": ``echo: finally``); anything else ->
``echo: <text>``; ``delegate PROMPT`` -> a hand-over of PROMPT to the sub-agent
``judge``. Every reply has fixed usage (a tool call: 20 in, 10 out, 4 of them
cached; a text or the typed value: 10 in, 5 out)."""

from __future__ import annotations

import itertools
import json
from typing import Any

from harnessc.testing import (
    RecordedRequest,
    ScriptedResponse,
    openai_events,
    openai_tool_call_events,
)

from .servekit import SPEC

VALUE = {"verdict": "approve", "score": 7}
OUTPUT = """output:
  mode: tool
  schema:
    type: object
    properties:
      verdict: {type: string, enum: [approve, reject]}
      score: {type: integer}
    required: [verdict, score]
    additionalProperties: false
"""
TYPED_SPEC = SPEC + "budget: {turns: 8}\n" + OUTPUT
PLAIN_SPEC = SPEC.replace('permissions:\n  ask: ["Bash(*)"]\n', "") + (
    """permissions:
  default: ask
  allow: ["Bash(echo *)"]
hooks:
  before_stop:
    - python: stophook:again
"""
)
STOP_HOOK = """
def again(event):
    message = getattr(event, "message", None)
    text = getattr(message, "text", "") or ""
    if text.startswith("echo: twice"):
        return {"continue": True, "message": "finally"}
    return None
"""
TOOL_USAGE = (20, 10, 4)
TEXT_USAGE = (10, 5, 0)

_ids = itertools.count(1)


def _text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return str(content or "")


def _value() -> ScriptedResponse:
    call = (f"call_v{next(_ids)}", "final_result", json.dumps(VALUE))
    return ScriptedResponse.sse(openai_tool_call_events([call], usage=TEXT_USAGE))


def model_reply(request: RecordedRequest) -> ScriptedResponse:
    body = request.json or {}
    messages = body.get("messages", [])
    last = messages[-1] if messages else {}
    text = _text(last)
    typed = any(
        (t.get("function") or {}).get("name") == "final_result" for t in body.get("tools") or []
    )
    if last.get("role") == "tool":
        if typed:
            return _value()
        return ScriptedResponse.sse(openai_events(["done: ", text], usage=TEXT_USAGE))
    if text.startswith("call "):
        _, name, *rest = text.split(" ", 2)
        arguments = rest[0] if rest else "{}"
        call = (f"call_{next(_ids)}", name, arguments)
        return ScriptedResponse.sse(openai_tool_call_events([call], usage=TOOL_USAGE))
    if text.startswith("verdict") and typed:
        return _value()
    if text.startswith("delegate "):  # a hand-over of the rest to the sub-agent judge
        handover = {"subagent_type": "judge", "description": "judge it", "prompt": text[9:]}
        call = (f"task_{next(_ids)}", "task", json.dumps(handover))
        return ScriptedResponse.sse(openai_tool_call_events([call], usage=TOOL_USAGE))
    if text.startswith("slow"):
        return ScriptedResponse.sse(
            openai_events(["slow ", "reply ", "here"], usage=TEXT_USAGE), chunk_delay_s=0.5
        )
    return ScriptedResponse.sse(openai_events(["echo: ", text], usage=TEXT_USAGE))


def saw(requests: list[RecordedRequest], last_prompt: str) -> list[Any]:
    """The messages the model got with ``last_prompt`` as the last user text."""
    for request in reversed(requests):
        messages = (request.json or {}).get("messages", [])
        if messages and _text(messages[-1]) == last_prompt:
            return list(messages)
    raise AssertionError(f"the model never got {last_prompt!r}")
