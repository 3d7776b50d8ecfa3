"""Item 1 (tools): a file name that is not UTF-8, or such bytes in a file, never break
the context: ls/find/grep/read show the byte as ``\\xe9``, the result encodes as UTF-8,
the next request and the session work, and the shown name can be used again."""

from __future__ import annotations

import asyncio
import json
import os

import pytest

from harnessc.runtime import AgentHarness, AgentHarnessOptions, Model, ToolResultMessage
from harnessc.runtime.session import JsonlSessionRepo
from harnessc.runtime.tools import (
    create_bash_tool,
    create_find_tool,
    create_grep_tool,
    create_ls_tool,
    create_read_tool,
)
from harnessc.runtime.tools.clean import clean_text
from harnessc.testing import ProtocolServer, ScriptedResponse, openai_events
from harnessc.testing.streams import openai_tool_call_events

LATIN1 = b"caf\xe9.txt"


@pytest.fixture
def latin_ws(ws):
    root, ctx = ws
    fd = os.open(os.fsencode(root) + b"/" + LATIN1, os.O_WRONLY | os.O_CREAT, 0o644)
    os.write(fd, b"needle in caf\xe9\n")
    os.close(fd)
    return root, ctx


def _encodable(result) -> str:
    text = "".join(getattr(c, "text", "") for c in result.content)
    json.dumps({"text": text, "details": result.details}, ensure_ascii=False).encode("utf-8")
    return text


@pytest.mark.parametrize(
    ("tool", "params"),
    [
        (create_ls_tool(), {}),
        (create_find_tool(), {"pattern": "*.txt"}),
        (create_grep_tool(), {"pattern": "needle"}),
        (create_bash_tool(), {"command": "ls; cat caf*"}),
    ],
)
def test_listings_encode_and_show_the_byte(latin_ws, run_tool, tool, params):
    _, ctx = latin_ws
    text = _encodable(run_tool(tool, params, ctx))
    assert "caf\\xe9.txt" in text or "caf\ufffd" in text, text


def test_the_shown_name_can_be_read_back(latin_ws, run_tool):
    _, ctx = latin_ws
    result = run_tool(create_read_tool(), {"path": "caf\\xe9.txt"}, ctx)
    text = _encodable(result)
    assert not result.is_error, text
    assert "needle in caf\ufffd" in text  # content bytes are replaced, name is escaped


def test_clean_text_joins_split_pairs_and_replaces_lone_surrogates():
    assert clean_text("ok") == "ok"
    assert clean_text("\ud83d\ude00") == "\U0001f600"
    assert clean_text("a\ud800b") == "a\ufffdb"
    assert clean_text("caf\udce9") == "caf\\xe9"


def test_a_listing_with_a_latin1_name_keeps_the_session_working(latin_ws, tmp_path, monkeypatch):
    root, ctx = latin_ws
    monkeypatch.setenv("LATIN_KEY", "k")
    calls = [("call_1", "ls", "{}"), ("call_2", "grep", json.dumps({"pattern": "needle"}))]
    with ProtocolServer() as server:
        server.enqueue(
            ScriptedResponse.sse(openai_tool_call_events(calls)),
            ScriptedResponse.sse(openai_events(["listed"])),
            ScriptedResponse.sse(openai_events(["again"])),
        )
        session = JsonlSessionRepo(tmp_path / "s").create(cwd=str(root))
        model = Model(
            id="m", api="openai-completions", base_url=server.url + "/v1", api_key_env="LATIN_KEY"
        )
        options = AgentHarnessOptions(
            session=session,
            models={"main": model},
            tools=[create_ls_tool(), create_grep_tool()],
            tool_context=None,
        )
        harness = AgentHarness(options)
        monkeypatch.chdir(root)
        first = asyncio.run(harness.prompt("list"))
        assert first.status == "done", first.reason
        second = asyncio.run(harness.prompt("and now?"))
        assert second.status == "done", second.reason
        bodies = [r.body.decode("utf-8") for r in server.requests]
    assert len(bodies) == 3 and "caf\\\\xe9.txt" in bodies[1]
    results = [m for m in harness.messages if isinstance(m, ToolResultMessage)]
    assert len(results) == 2 and not any(r.is_error for r in results)
    harness.session.close()
    reopened = JsonlSessionRepo(tmp_path / "s").open(session.path, read_only=True)
    try:
        assert reopened.diagnostics == []
        texts = [m.text for m in reopened.context().messages if isinstance(m, ToolResultMessage)]
        assert any("caf\\xe9.txt" in text for text in texts), texts
    finally:
        reopened.close()
