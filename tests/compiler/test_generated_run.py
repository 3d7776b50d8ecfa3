"""The committed generated modules import and run, offline, with the scripted provider.

Each test works in a temporary directory (the agents' sessions, audit logs, notes and
files land there), builds the options with an in-memory session and drives the
harness through real tools, hooks and extensions.
"""

from __future__ import annotations

import importlib.util
import json
import types
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from harnessc.runtime.agent import AgentHarness
from harnessc.runtime.core.messages import AssistantMessage, ToolResultMessage, UserMessage
from harnessc.runtime.providers.scripted import ScriptedProvider, reply_text, reply_tool_calls
from harnessc.runtime.session import Session

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.chdir(tmp_path)
    for var in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY"):
        monkeypatch.setenv(var, "test-key")
    yield tmp_path


@pytest.fixture
def agent() -> Callable[[str], types.ModuleType]:
    counter = iter(range(1_000_000))

    def load(name: str) -> types.ModuleType:
        spec = importlib.util.spec_from_file_location(
            f"generated_{name}_{next(counter)}", REPO / "generated" / f"{name}.py"
        )
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module

    return load


def harness_for(
    module: types.ModuleType, replies: list[object]
) -> tuple[AgentHarness, ScriptedProvider]:
    options = module.build_options(session=Session())
    provider = ScriptedProvider(replies)  # type: ignore[arg-type]
    options.provider = provider
    return AgentHarness(options), provider


def tool_results(harness: AgentHarness) -> dict[str, ToolResultMessage]:
    return {m.tool_call_id: m for m in harness.messages if isinstance(m, ToolResultMessage)}


def text_of(message: object) -> str:
    content = getattr(message, "content", "")
    if isinstance(content, str):
        return content
    return "".join(getattr(part, "text", "") for part in content)


def test_every_module_builds_its_options(
    workdir: Path, agent: Callable[[str], types.ModuleType]
) -> None:
    for path in sorted((REPO / "generated").glob("*.py")):
        module = agent(path.stem)
        options = module.build_options(session=Session())
        assert options.model in options.models
        assert module.SPEC_DIR == (REPO / "agents").resolve()
        assert callable(module.main)


def test_hello_answers(workdir: Path, agent: Callable[[str], types.ModuleType]) -> None:
    harness, provider = harness_for(agent("hello"), ["Hello there!"])
    result = harness.prompt_sync("hi")
    assert result.status == "done"
    assert text_of(harness.messages[-1]) == "Hello there!"
    request = provider.requests[0]
    assert request.context.system_prompt.startswith("You are a friendly assistant.")
    assert harness.model.base_url == "http://localhost:11434/v1"
    assert harness.model.id == "llama3.2"


def test_hello_reads_env_refs_when_built(
    workdir: Path, agent: Callable[[str], types.ModuleType], monkeypatch: pytest.MonkeyPatch
) -> None:
    module = agent("hello")
    monkeypatch.setenv("HELLO_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("HELLO_MODEL", "qwen3")
    model = module.build_options(session=Session()).models["local"]
    assert (model.base_url, model.id) == ("http://127.0.0.1:9/v1", "qwen3")


def test_coder_tools_hooks_and_pull_point(
    workdir: Path, agent: Callable[[str], types.ModuleType]
) -> None:
    (workdir / "src").mkdir()
    (workdir / "src" / "a.py").write_text("x = 1\ny = 2\n")
    harness, provider = harness_for(
        agent("coder"),
        [
            reply_tool_calls(
                [
                    ("bash", {"command": "echo hi"}, "c_bash"),
                    ("count_lines", {"path": "src", "pattern": "*.py"}, "c_count"),
                    ("write", {"path": ".env", "content": "SECRET=1"}, "c_env"),
                    ("bash", {"command": "rm -rf /"}, "c_rm"),
                    ("write", {"path": "notes.txt", "content": "fine"}, "c_write"),
                ]
            ),
            reply_tool_calls([("ask_user", {"question": "Ship it?"}, "c_ask")]),
            reply_text("Shipped."),
        ],
    )
    assert harness.active_tool_names == [
        "bash",
        "read",
        "write",
        "edit",
        "grep",
        "count_lines",
        "ask_user",
    ]
    assert harness.thinking_level.value == "medium"
    first = harness.prompt_sync("tidy up")
    assert first.status == "awaiting_tool"
    assert [c.id for c in first.pending_tool_calls] == ["c_ask"]
    results = tool_results(harness)
    assert text_of(results["c_bash"]).strip() == "hi"
    assert json.loads(text_of(results["c_count"])) == {"src/a.py": 2, "total": 2}
    assert results["c_env"].is_error
    assert f"refusing to modify {workdir / '.env'}:" in text_of(results["c_env"])
    assert results["c_rm"].is_error and "refusing to delete from the root" in text_of(
        results["c_rm"]
    )
    assert (workdir / "notes.txt").read_text() == "fine" and not (workdir / ".env").exists()

    done = harness.resume_sync({"c_ask": "yes"})
    assert done.status == "done"
    assert text_of(tool_results(harness)["c_ask"]) == "yes"
    audit = [
        json.loads(line)
        for line in (workdir / ".harnessc" / "audit.jsonl").read_text().splitlines()
    ]
    assert {row["call_id"] for row in audit} >= {"c_bash", "c_count", "c_write"}
    # The spec's skills and templates were loaded from agents/ and listed for the model.
    names = {skill.name for skill in harness.resources.skills}
    assert names == {"python-testing", "git-commit"}
    assert "<available_skills>" in provider.requests[0].context.system_prompt


def test_researcher_python_tools(
    workdir: Path, agent: Callable[[str], types.ModuleType], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RESEARCH_NOTES", str(workdir / "notes"))
    harness, provider = harness_for(
        agent("researcher"),
        [
            reply_tool_calls(
                [
                    (
                        "add_note",
                        {
                            "title": "WAL allows one writer",
                            "body": "SQLite in WAL mode has one writer and many readers.",
                            "source": "sqlite.org/wal.html",
                            "confidence": "high",
                        },
                        "c_add",
                    )
                ]
            ),
            reply_tool_calls(
                [
                    ("search_notes", {"query": "wal writer"}, "c_search"),
                    ("note_index", {}, "c_index"),
                ]
            ),
            reply_text("One writer [wal-allows-one-writer]."),
        ],
    )
    assert harness.prompt_sync("what does WAL allow?").status == "done"
    results = tool_results(harness)
    assert text_of(results["c_add"]) == "wal-allows-one-writer"
    assert json.loads(text_of(results["c_search"]))[0]["id"] == "wal-allows-one-writer"
    assert json.loads(text_of(results["c_index"])) == ["wal-allows-one-writer"]
    tools = {spec.name: spec for spec in provider.requests[0].context.tools}
    assert tools["add_note"].description == "Save a sourced note; returns its id."
    params = tools["add_note"].parameters
    assert params["properties"]["confidence"]["enum"] == ["low", "medium", "high"]
    assert set(params["required"]) == {"title", "body", "source"}
    assert "context" not in params["properties"]
    assert harness.model.api == "anthropic-messages"


def test_autonomous_continues_until_finish(
    workdir: Path, agent: Callable[[str], types.ModuleType]
) -> None:
    items = [{"id": "1", "title": "write hello.txt"}]
    harness, provider = harness_for(
        agent("autonomous"),
        [
            reply_tool_calls([("todo", {"op": "set", "items": items})]),
            reply_text("I will get to it."),  # would stop: turn_continue pushes on
            reply_tool_calls([("write", {"path": "hello.txt", "content": "hello"})]),
            reply_tool_calls([("todo", {"op": "complete", "ids": ["1"]})]),
            reply_tool_calls([("finish", {"status": "completed", "summary": "wrote hello.txt"})]),
            reply_text("Done."),
        ],
    )
    result = harness.prompt_sync("create hello.txt")
    assert result.status == "done"
    assert (workdir / "hello.txt").read_text() == "hello"
    continues = [
        m for m in harness.messages if isinstance(m, UserMessage) and "Keep going" in text_of(m)
    ]
    assert len(continues) == 1 and "- [pending] write hello.txt (id: 1)" in text_of(continues[0])
    assert len(provider.requests) == 6
    assert harness.budget.budget.turns == 25


def test_reviewer_approval_and_command_hooks(
    workdir: Path, agent: Callable[[str], types.ModuleType], monkeypatch: pytest.MonkeyPatch
) -> None:
    notify = workdir / "notify.txt"
    monkeypatch.setenv("REVIEW_NOTIFY_FILE", str(notify))
    harness, _provider = harness_for(
        agent("reviewer"),
        [
            reply_tool_calls(
                [("bash", {"command": "ls"}, "c_ls"), ("bash", {"command": "rm -rf src"}, "c_rm")]
            ),
            reply_tool_calls(
                [("request_approval", {"summary": "Fix typo", "risk": "low"}, "c_ok")]
            ),
            reply_text("Approved; here is the fix."),
        ],
    )
    first = harness.prompt_sync("review the change")
    assert first.status == "awaiting_tool"
    results = tool_results(harness)
    assert not results["c_ls"].is_error
    assert results["c_rm"].is_error and "read-only" in text_of(results["c_rm"])
    assert harness.resume_sync({"c_ok": "approved"}).status == "done"
    assert isinstance(harness.messages[-1], AssistantMessage)
    assert notify.read_text().startswith("review finished: session ")
    assert harness.model.api == "google-generative-ai"
    assert harness.stream_options.headers == {"X-Review-Run": "local"}
