"""Hook moments written in a spec keep their meaning in the generated module.

The seed-004 aliases ``tool.error``, ``tool.result`` and ``plan.draft`` filter the
event they map to (only failed results, only successful ones, only assistant
messages); the module registers them under the alias so the harness keeps the filter.
"""

from __future__ import annotations

import json
import re
import uuid
from pathlib import Path

import pytest

from harnessc.compiler import compile
from harnessc.compiler.live import load_module
from harnessc.compiler.render import hook_moment
from harnessc.runtime.agent import AgentHarness
from harnessc.runtime.core.events import EVENT_ALIASES
from harnessc.runtime.providers.scripted import ScriptedProvider, reply_text, reply_tool_calls
from harnessc.runtime.session import Session
from harnessc.spec import format_diagnostics, parse_spec

HOOKS = """
import json
import os


def _log(kind, event):
    with open(os.environ["HOOK_LOG"], "a", encoding="utf-8") as fh:
        row = {"kind": kind, "type": event.type}
        for key in ("tool_call_id", "is_error"):
            if hasattr(event, key):
                row[key] = getattr(event, key)
        role = getattr(getattr(event, "message", None), "role", None)
        if role is not None:
            row["role"] = role
        fh.write(json.dumps(row) + "\\n")


def on_error(event):
    _log("tool.error", event)


def on_result(event):
    _log("tool.result", event)


def on_end(event):
    _log("tool_execution_end", event)


def on_draft(event):
    _log("plan.draft", event)
"""

SPEC = """\
version: 1
name: hook-aliases
models:
  main: {{provider: openai, id: gpt-4.1, base_url: "http://127.0.0.1:9/v1"}}
tools: [read]
session: {{repo: memory}}
hooks:
  tool.error:
    - python: {module}:on_error
  tool.result:
    - python: {module}:on_result
  tool_execution_end:
    - python: {module}:on_end
  plan.draft:
    - python: {module}:on_draft
"""


def test_filtered_aliases_keep_their_name_and_others_are_canonical() -> None:
    filtered = {name for name, (_, check) in EVENT_ALIASES.items() if check is not None}
    assert filtered == {"tool.error", "tool.result", "plan.draft"}
    for name in filtered:
        assert hook_moment(name) == name
    assert hook_moment("tool.call") == "tool_execution_start"
    assert hook_moment("session.complete") == "agent_end"
    assert hook_moment("before_tool_call") == "tool_call"


def test_tool_error_hook_fires_only_for_failed_results(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = f"alias_hooks_{uuid.uuid4().hex[:12]}"
    spec_dir = tmp_path / "agents"
    spec_dir.mkdir()
    (spec_dir / f"{module}.py").write_text(HOOKS)
    spec_path = spec_dir / "hook-aliases.yaml"
    spec_path.write_text(SPEC.format(module=module))
    log = tmp_path / "hooks.jsonl"
    monkeypatch.setenv("HOOK_LOG", str(log))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "present.txt").write_text("here\n")

    loaded = parse_spec(spec_path.read_bytes(), spec_path)
    assert loaded.ok, format_diagnostics(loaded.diagnostics)
    text = compile(loaded, tmp_path / "generated")["hook_aliases.py"]
    moments = re.findall(r'python_hook\(\s*"([^"]+)"', text)
    assert moments == ["tool.error", "tool.result", "tool_execution_end", "plan.draft"]
    agent = load_module(text, "hook_aliases", tmp_path / "generated" / "hook_aliases.py")

    options = agent.build_options(session=Session())
    options.provider = ScriptedProvider(
        [
            reply_tool_calls(
                [
                    ("read", {"path": "present.txt"}, "c_ok"),
                    ("read", {"path": "missing.txt"}, "c_missing"),
                ]
            ),
            reply_text("done"),
        ]
    )
    harness = AgentHarness(options)
    assert harness.prompt_sync("read both").status == "done"

    rows = [json.loads(line) for line in log.read_text().splitlines()]
    by_kind: dict[str, list[dict[str, object]]] = {}
    for row in rows:
        by_kind.setdefault(str(row["kind"]), []).append(row)
    assert [(r["tool_call_id"], r["is_error"]) for r in by_kind["tool.error"]] == [
        ("c_missing", True)
    ]
    assert [(r["tool_call_id"], r["is_error"]) for r in by_kind["tool.result"]] == [("c_ok", False)]
    assert sorted(str(r["tool_call_id"]) for r in by_kind["tool_execution_end"]) == [
        "c_missing",
        "c_ok",
    ]
    # plan.draft: assistant messages only (two replies), never the user or tool results
    assert [r["role"] for r in by_kind["plan.draft"]] == ["assistant", "assistant"]
