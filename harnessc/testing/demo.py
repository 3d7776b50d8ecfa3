"""A key-free demo model: an OpenAI-compatible server on this machine that answers by rule.

``harnessc serve-demo`` and ``python -m harnessc.testing`` start it, so a first agent runs
end to end, tools included, with no API key and no model download. It is the scripted
``ProtocolServer`` of the tests with a handler that plays a tiny model. What it does with
the last user message (each only when the request offers the tool it needs):

- "list the files" (or "ls", "what is here") -> ``ls`` (or ``bash ls``);
- "read PATH" -> ``read``; "grep WORD" / "find WORD" -> ``grep``;
- "run COMMAND" -> ``bash`` (in the sandbox of an agent ``harnessc new`` made, "run cat
  .env" and "run curl -s https://example.com" show what it keeps from programs);
- "write PATH: TEXT" -> ``write``; "replace OLD with NEW in PATH" -> ``edit``;
- "ask me QUESTION" -> the first external-looking ``ask*`` tool (the run pauses for the answer);
- "use the NAME skill" -> ``read`` of that skill's ``SKILL.md`` from the system prompt;
- "keep going" (or "count to N") -> one tool call per turn until N turns or a budget pauses it;
- "call TOOL {json}" -> any offered tool (an MCP server's tool, say) with those arguments;
- "ask the NAME agent to PROMPT" (or "have NAME PROMPT") -> ``task``: hands PROMPT to the
  sub-agent NAME (one the ``task`` tool offers), which the demo model plays too;
- anything else -> a short reply saying what it can do.

An agent with typed output (``output:``) gets its answer as a value of its schema: where
the demo would reply in text it calls ``final_result`` (or, asked for JSON with
``response_format``, replies with JSON) instead, the text in the first string field,
an enum's value named in the prompt (else its first), the count of the last tool
result's lines in numbers (within the schema's bounds).

A prompt template expands before it reaches the model, so ``/summarize notes.txt``
arrives as "Read notes.txt and ..." and reads the file. After a tool result the model
describes it (or, in "keep going", calls the next tool). It streams its replies as
chat-completions SSE, reports token usage and lists its models at ``GET /v1/models``.
"""

from __future__ import annotations

import argparse
import json
import re
import signal
import threading
from typing import Any

from harnessc.runtime.options.typed_output import OUTPUT_TOOL
from harnessc.testing.protocol_server import ProtocolServer, RecordedRequest, ScriptedResponse
from harnessc.testing.streams import openai_events, openai_tool_call_events, split_text

__all__ = ["DEMO_MODELS", "DemoModel", "main", "serve"]

DEMO_MODELS = ("demo", "gpt-4.1-mini", "gpt-4.1", "llama3.2")
DEFAULT_PORT = 8765

_HELP = (
    "Hello from the harnessc demo model (a local stand-in, no API key needed). "
    'Try "list the files here", "read README.md", "grep TODO", "run echo hi", '
    '"write notes.txt: hello", "replace hello with bye in notes.txt", "ask me a question", '
    '"run cat .env" or "run curl -s https://example.com" (the sandbox blocks both), '
    '"use the checklist skill", "keep going", "ask the scout agent to list the files here" '
    'or "call TOOL {...}".'
)
_WORD = "`'\"“”"  # quotes around a word, stripped; a leading dot stays (.env)


class DemoModel:
    """The handler: one scripted answer per request, from the last message of the chat."""

    def __init__(self) -> None:
        self._calls = 0
        self._lock = threading.Lock()

    def __call__(self, request: RecordedRequest) -> ScriptedResponse:
        if request.method == "GET" and request.route.rstrip("/").endswith("/models"):
            body = {"object": "list", "data": [{"id": m, "object": "model"} for m in DEMO_MODELS]}
            return ScriptedResponse.json_body(200, body)
        payload = request.json
        if request.method != "POST" or not isinstance(payload, dict):
            return ScriptedResponse.json_body(404, {"error": {"message": "not found"}})
        messages = payload.get("messages") or []
        offered = {
            t["function"].get("name"): t["function"].get("parameters") or {}
            for t in payload.get("tools") or []
            if isinstance(t, dict) and isinstance(t.get("function"), dict)
        }
        tools = set(offered)
        last = messages[-1] if messages else {}
        prompt = _last_prompt(messages)
        if last.get("role") == "tool":
            steps = _steps(prompt)
            done = _tool_results_since_prompt(messages)
            if steps and done < steps and ("ls" in tools or "bash" in tools):
                name = "ls" if "ls" in tools else "bash"
                return self._call(name, {"path": "."} if name == "ls" else {"command": "ls"})
            text = _describe_result(messages, last)
            typed = _describe_result(messages, last, plain=True)
            return self._answer(text, payload, offered, messages, typed)
        first = messages[0] if messages and isinstance(messages[0], dict) else {}
        system = _text_of(first.get("content")) if first.get("role") == "system" else ""
        call = _hand_over(prompt, offered.get("task")) or _plan(prompt, tools, system)
        if call is None:
            return self._answer(_HELP, payload, offered, messages)
        return self._call(*call)

    def _answer(
        self,
        text: str,
        payload: dict[str, Any],
        offered: dict[str, Any],
        messages: list[Any],
        typed: str | None = None,
    ) -> ScriptedResponse:
        """``text``, or the typed answer an agent with ``output:`` asks for (its strings:
        ``typed``, default ``text``)."""
        prompt = _last_prompt(messages)
        count = _result_lines(messages)
        if OUTPUT_TOOL in offered:
            value = _fill(offered[OUTPUT_TOOL], typed or text, prompt, count)
            return self._call(OUTPUT_TOOL, value if isinstance(value, dict) else {})
        response_format = payload.get("response_format")
        if isinstance(response_format, dict) and response_format.get("type") == "json_schema":
            schema = (response_format.get("json_schema") or {}).get("schema") or {}
            return self._text(json.dumps(_fill(schema, typed or text, prompt, count)))
        return self._text(text)

    def _call(self, name: str, arguments: dict[str, Any]) -> ScriptedResponse:
        with self._lock:
            self._calls += 1
            call_id = f"demo_{self._calls}"
        events = openai_tool_call_events([(call_id, name, json.dumps(arguments))])
        return ScriptedResponse.sse(events)

    def _text(self, text: str) -> ScriptedResponse:
        return ScriptedResponse.sse(
            openai_events(split_text(text, 12), usage=(40, len(text) // 4, 0))
        )


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


def _last_prompt(messages: list[Any]) -> str:
    for message in reversed(messages):
        if isinstance(message, dict) and message.get("role") == "user":
            return _text_of(message.get("content"))
    return ""


def _tool_results_since_prompt(messages: list[Any]) -> int:
    count = 0
    for message in reversed(messages):
        role = message.get("role") if isinstance(message, dict) else None
        if role == "user":
            break
        count += role == "tool"
    return count


def _steps(prompt: str) -> int:
    """How many tool turns "keep going" / "count to N" asks for (0: not such a prompt)."""
    count = re.search(r"\bcount to (\d{1,4})\b", prompt, re.I)
    if count:
        return int(count.group(1))
    return 1000 if re.search(r"\bkeep going\b", prompt, re.I) else 0


def _word(text: str) -> str:
    """A path or word as the user wrote it, without quotes or a sentence's last stop (a
    leading dot stays: ``.env``)."""
    word = text.strip(_WORD).rstrip(",;:!?")
    if len(word) > 1 and word.endswith(".") and not word.endswith(".."):
        word = word[:-1]
    return word


def _plan(prompt: str, tools: set[str], system: str = "") -> tuple[str, dict[str, Any]] | None:
    """The tool call the demo makes for ``prompt`` (None: answer in text)."""
    text = prompt.strip()
    lowered = text.lower()
    call = re.match(r"call\s+(\S+)\s*(\{.*\})?\s*$", text, re.I | re.S)
    if call and call.group(1) in tools:
        try:
            arguments = json.loads(call.group(2) or "{}")
        except ValueError:
            arguments = {}
        return call.group(1), arguments if isinstance(arguments, dict) else {}
    run = re.match(r"(?:run|bash|\$)\s+(.+)$", text, re.I | re.S)
    if run and "bash" in tools:
        return "bash", {"command": run.group(1).strip().strip("`")}
    write = re.match(r"write\s+(\S+?):\s*(.*)$", text, re.I | re.S)
    if write and "write" in tools:
        return "write", {"path": _word(write.group(1)), "content": write.group(2) + "\n"}
    edit = re.match(r"replace\s+(.+?)\s+with\s+(.+?)\s+in\s+(\S+)$", text, re.I | re.S)
    if edit and "edit" in tools:
        change = {"old_text": edit.group(1).strip(_WORD), "new_text": edit.group(2).strip(_WORD)}
        return "edit", {"path": _word(edit.group(3)), "edits": [change]}
    ask = re.match(r"ask me\s*(.*)$", text, re.I | re.S)
    asker = sorted(t for t in tools if t.startswith("ask"))
    if ask and asker:
        return asker[0], {"question": ask.group(1).strip() or "What should I do next?"}
    skill = re.search(r"\buse the ([\w.-]+) skill\b|\bskill[: ]+([\w.-]+)", text, re.I)
    if skill and "read" in tools:
        name = skill.group(1) or skill.group(2)
        found = re.search(
            rf"<name>{re.escape(name)}</name>.*?<location>([^<]+)</location>", system, re.S
        )
        if found:
            return "read", {"path": found.group(1)}
    if _steps(text) and ("ls" in tools or "bash" in tools):
        return ("ls", {"path": "."}) if "ls" in tools else ("bash", {"command": "ls"})
    read = re.search(r"\bread\s+(\S+)", text, re.I)
    if read and "read" in tools:
        return "read", {"path": _word(read.group(1))}
    search = re.search(r"\b(?:grep|find|search for)\s+(\S+)", text, re.I)
    if search and "grep" in tools:
        return "grep", {"pattern": _word(search.group(1))}
    if re.search(r"\b(list|ls|files|what is here)\b", lowered):
        if "ls" in tools:
            return "ls", {"path": "."}
        if "bash" in tools:
            return "bash", {"command": "ls"}
    return None


def _hand_over(prompt: str, task: Any) -> tuple[str, dict[str, Any]] | None:
    """``task`` for "ask the NAME agent to PROMPT" when NAME is a sub-agent it offers."""
    if not isinstance(task, dict):
        return None
    found = re.match(
        r"(?:ask|tell|have)\s+(?:the\s+)?([\w.-]+)(?:\s+(?:sub-?)?agent)?\s+(?:to\s+)?(.+)$",
        prompt.strip(),
        re.I | re.S,
    )
    kind = (task.get("properties") or {}).get("subagent_type") or {}
    names = kind.get("enum") or []
    if found is None or found.group(1) not in names:
        return None
    work = found.group(2).strip()
    arguments = {"subagent_type": found.group(1), "description": work[:40], "prompt": work}
    return "task", arguments


def _result_lines(messages: list[Any]) -> int:
    """The lines of the last tool result since the prompt (0: none)."""
    for message in reversed(messages):
        role = message.get("role") if isinstance(message, dict) else None
        if role == "user":
            return 0
        if role == "tool":
            return len(_text_of(message.get("content")).strip().splitlines())
    return 0


def _fill(schema: Any, text: str, prompt: str, count: int) -> Any:
    """A value of JSON Schema ``schema``: ``text`` in strings, an enum's value named in
    ``prompt`` (else its first), ``count`` in numbers (within their bounds)."""
    if not isinstance(schema, dict):
        return text
    for key in ("const", "default"):
        if key in schema:
            return schema[key]
    if schema.get("enum"):
        named = [v for v in schema["enum"] if str(v).lower() in prompt.lower()]
        return (named or schema["enum"])[0]
    for key in ("anyOf", "oneOf", "allOf"):
        if schema.get(key):
            return _fill(schema[key][0], text, prompt, count)
    kind = schema.get("type")
    kind = next((k for k in kind if k != "null"), "null") if isinstance(kind, list) else kind
    if kind == "object" or "properties" in schema:
        value: dict[str, Any] = {}
        for name, sub in (schema.get("properties") or {}).items():
            value[name] = _fill(sub, text, prompt, count)
            if isinstance(value[name], str):
                text = value[name][:80]  # later strings repeat it, shorter
        return value
    if kind == "array":
        return [_fill(schema.get("items"), text, prompt, count)] * int(schema.get("minItems", 0))
    if kind in ("integer", "number"):
        number = float(count)
        for key, step in (("minimum", 0), ("exclusiveMinimum", 1)):
            if isinstance(schema.get(key), (int, float)):
                number = max(number, schema[key] + step)
        for key, step in (("maximum", 0), ("exclusiveMaximum", 1)):
            if isinstance(schema.get(key), (int, float)):
                number = min(number, schema[key] - step)
        return int(number) if kind == "integer" else number
    if kind == "boolean":
        return True
    if kind == "null":
        return None
    limit = schema.get("maxLength")
    return text[:limit] if isinstance(limit, int) else text


def _describe_result(messages: list[Any], result: dict[str, Any], *, plain: bool = False) -> str:
    """What a tool returned: its first 20 lines in a fenced block (``plain``: the first
    ten on one line, for a typed answer)."""
    name = "the tool"
    for message in reversed(messages):
        for call in message.get("tool_calls") or []:
            if call.get("id") == result.get("tool_call_id"):
                name = f"`{call.get('function', {}).get('name', 'the tool')}`"
    text = _text_of(result.get("content")).strip()
    lines = text.splitlines()
    if plain:
        listed = ", ".join(line.strip() for line in lines[:10]) + (
            ", ..." if len(lines) > 10 else ""
        )
        return f"{name} returned {len(lines)} lines: {listed}"
    shown = "\n".join(lines[:20]) + ("\n..." if len(lines) > 20 else "")
    return f"Here is what {name} returned ({len(lines)} lines):\n\n```\n{shown}\n```\n"


def serve(host: str = "127.0.0.1", port: int = DEFAULT_PORT) -> ProtocolServer:
    """Start the demo server (in a background thread); ``stop()`` ends it."""
    server = ProtocolServer(host=host, port=port)
    server.set_handler(DemoModel())
    return server.start()


def main(argv: list[str] | None = None, prog: str = "python -m harnessc.testing") -> int:
    parser = argparse.ArgumentParser(prog=prog, description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help="port (0: any free one)")
    args = parser.parse_args(argv)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        server = serve(args.host, args.port)
    except OSError as exc:
        print(f"{prog}: cannot listen on {args.host}:{args.port}: {exc.strerror or exc}")
        return 2
    url = f"{server.url}/v1"
    print(f"demo model server at {url} (no API key needed; Ctrl-C stops it)", flush=True)
    print(f'  HARNESSC_BASE_URL={url} harnessc run NAME "list the files here"', flush=True)
    try:
        stop.wait()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    return 0
