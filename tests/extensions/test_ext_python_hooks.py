from __future__ import annotations

import asyncio
import itertools
import textwrap
from pathlib import Path
from typing import Any

import pytest

from harnessc.runtime.core.hooks import ContextResult, PauseRequest, ToolCallResult
from harnessc.runtime.core.messages import ToolResultMessage, UserMessage
from harnessc.runtime.extensions import block_rule, python_hook
from harnessc.runtime.extensions.protocol import HookProtocolError, check_result
from harnessc.runtime.providers.scripted import reply_text, reply_tool_calls

from ._ext_support import echo_tool, errors

_counter = itertools.count()


def _module(tmp_path: Path, source: str) -> str:
    """Write a uniquely named module into tmp_path; returns its name."""
    name = f"ext_hooks_{next(_counter)}_{tmp_path.name.replace('-', '_')}"
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(source), encoding="utf-8")
    return name


def _one_call(text: str = "hello") -> list[Any]:
    return [reply_tool_calls([("echo", {"text": text})]), reply_text("done")]


def _result(harness: Any) -> ToolResultMessage:
    [result] = [m for m in harness.messages if isinstance(m, ToolResultMessage)]
    return result


def test_sync_hook_blocks(make_harness: Any, tmp_path: Path) -> None:
    mod = _module(
        tmp_path,
        """
        from harnessc.runtime.core.hooks import ToolCallResult

        def guard(event):
            if "secret" in event.input.get("text", ""):
                return ToolCallResult(block=True, reason="no secrets")
            return None
        """,
    )
    hook = python_hook("tool_call", f"{mod}:guard", base_dir=tmp_path)
    seen: list[dict[str, Any]] = []
    harness, log = make_harness(_one_call("a secret"), [echo_tool(seen=seen)], hooks=[hook])
    asyncio.run(harness.prompt("go"))
    assert seen == []
    assert _result(harness).text == "Tool call blocked: no secrets"
    assert errors(log) == []


def test_async_hook_with_harness_argument(make_harness: Any, tmp_path: Path) -> None:
    mod = _module(
        tmp_path,
        """
        from harnessc.runtime.core.hooks import ContextResult
        from harnessc.runtime.core.messages import UserMessage

        async def add_note(event, harness):
            note = UserMessage("session " + harness.session.id)
            return ContextResult(messages=[*event.messages, note])
        """,
    )
    hook = python_hook("before_step", f"{mod}:add_note", base_dir=tmp_path)
    harness, _ = make_harness([reply_text("ok")], [], hooks=[hook])
    asyncio.run(harness.prompt("go"))
    provider = harness.options.provider
    sent = provider.requests[0].context.messages
    assert isinstance(sent[-1], UserMessage) and sent[-1].content == f"session {harness.session.id}"


def test_dict_results_are_accepted(make_harness: Any, tmp_path: Path) -> None:
    mod = _module(
        tmp_path,
        """
        def rewrite(event):
            return {"input": {"text": "changed"}}
        """,
    )
    seen: list[dict[str, Any]] = []
    hook = python_hook("tool_call", f"{mod}:rewrite", base_dir=tmp_path)
    harness, log = make_harness(_one_call(), [echo_tool(seen=seen)], hooks=[hook])
    asyncio.run(harness.prompt("go"))
    assert seen == [{"text": "changed"}]
    assert errors(log) == []


def test_raising_hook_fails_closed_on_tool_call(make_harness: Any, tmp_path: Path) -> None:
    mod = _module(tmp_path, "def broken(event):\n    raise RuntimeError('oops')\n")
    hook = python_hook("tool_call", f"{mod}:broken", base_dir=tmp_path)
    seen: list[dict[str, Any]] = []
    harness, log = make_harness(_one_call(), [echo_tool(seen=seen)], hooks=[hook])
    result = asyncio.run(harness.prompt("go"))
    assert result.status == "done"
    assert seen == []
    assert "RuntimeError: oops" in _result(harness).text
    assert any("RuntimeError: oops" in m for m in errors(log))


def test_raising_hook_elsewhere_is_reported_and_ignored(make_harness: Any, tmp_path: Path) -> None:
    mod = _module(tmp_path, "def broken(event):\n    raise RuntimeError('oops')\n")
    hook = python_hook("tool_result", f"{mod}:broken", base_dir=tmp_path)
    harness, log = make_harness(_one_call(), [echo_tool()], hooks=[hook])
    asyncio.run(harness.prompt("go"))
    assert _result(harness).text == "hello"
    assert len(errors(log)) == 1


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_hanging_hook_times_out(make_harness: Any, tmp_path: Path, kind: str) -> None:
    marker = tmp_path / "hook-returned"  # written only if the hook ever returns
    source = (
        f"import time\ndef hang(event):\n    time.sleep(3)\n    open({str(marker)!r}, 'w')\n"
        if kind == "sync"
        else "import asyncio\nasync def hang(event):\n    await asyncio.sleep(3)\n"
        f"    open({str(marker)!r}, 'w')\n"
    )
    mod = _module(tmp_path, source)
    hook = python_hook("tool_call", f"{mod}:hang", base_dir=tmp_path, timeout_s=0.2)
    seen: list[dict[str, Any]] = []
    harness, log = make_harness(_one_call(), [echo_tool(seen=seen)], hooks=[hook])
    result = asyncio.run(harness.prompt("go"))
    assert not marker.exists()  # the run ended without waiting for the hook
    assert result.status == "done"
    assert seen == []
    assert "did not return within 0.2 s" in _result(harness).text
    assert any("did not return within 0.2 s" in m for m in errors(log))


def test_wrong_return_type_fails_closed_on_tool_call(make_harness: Any, tmp_path: Path) -> None:
    mod = _module(tmp_path, "def odd(event):\n    return 'yes'\n")
    hook = python_hook("tool_call", f"{mod}:odd", base_dir=tmp_path)
    seen: list[dict[str, Any]] = []
    harness, log = make_harness(_one_call(), [echo_tool(seen=seen)], hooks=[hook])
    asyncio.run(harness.prompt("go"))
    assert seen == []
    assert any("returned str, which tool_call does not accept" in m for m in errors(log))


UNREADABLE_TOOL_CALL_RESULTS = {
    "mistyped key": '{"blocked": True}',
    "a word": '"deny"',
    "block not a bool": '{"block": 0, "reason": "no"}',
    "block null": '{"block": None, "reason": "no"}',
    "input not an object": 'ToolCallResult(input="rm -rf /")',
}


@pytest.mark.parametrize("kind", ["python_hook", "harness.on"])
@pytest.mark.parametrize(
    "answer", UNREADABLE_TOOL_CALL_RESULTS.values(), ids=list(UNREADABLE_TOOL_CALL_RESULTS)
)
def test_unreadable_tool_call_result_blocks_and_names_the_hook(
    make_harness: Any, tmp_path: Path, kind: str, answer: str
) -> None:
    mod = _module(
        tmp_path,
        f"""
        from harnessc.runtime.core.hooks import ToolCallResult

        def guard(event):
            return {answer}
        """,
    )
    seen: list[dict[str, Any]] = []
    if kind == "python_hook":
        hooks = [python_hook("tool_call", f"{mod}:guard", base_dir=tmp_path)]
        harness, log = make_harness(_one_call(), [echo_tool(seen=seen)], hooks=hooks)
    else:
        import importlib
        import sys

        sys.path.insert(0, str(tmp_path))
        try:
            guard = importlib.import_module(mod).guard
        finally:
            sys.path.remove(str(tmp_path))
        harness, log = make_harness(_one_call(), [echo_tool(seen=seen)])
        harness.on("tool_call", guard)
    result = asyncio.run(harness.prompt("go"))
    assert result.status == "done"
    assert seen == []  # never run: an answer that cannot be read is no "allow"
    assert _result(harness).is_error
    assert _result(harness).text.startswith("Tool call blocked: hook tool_call (")
    [error] = errors(log)
    assert "guard" in error and "tool_call" in error, error


def test_readable_tool_call_results_still_allow(make_harness: Any) -> None:
    seen: list[dict[str, Any]] = []
    harness, log = make_harness(_one_call() + _one_call(), [echo_tool(seen=seen)])
    harness.on("tool_call", lambda event: {"block": False, "reason": None})
    harness.on("tool_call", lambda event: True)
    asyncio.run(harness.prompt("go"))
    asyncio.run(harness.prompt("again"))
    assert seen == [{"text": "hello"}, {"text": "hello"}]
    assert errors(log) == []


def test_wrong_return_type_on_an_event_is_ignored(make_harness: Any, tmp_path: Path) -> None:
    mod = _module(tmp_path, "def odd(event):\n    return 42\n")
    hook = python_hook("turn_end", f"{mod}:odd", base_dir=tmp_path)
    harness, log = make_harness(_one_call(), [echo_tool()], hooks=[hook])
    result = asyncio.run(harness.prompt("go"))
    assert result.status == "done"
    assert _result(harness).text == "hello"
    assert len(errors(log)) == 2  # one per turn
    assert "only observes" in errors(log)[0]


def test_event_hook_may_pause(make_harness: Any, tmp_path: Path) -> None:
    mod = _module(
        tmp_path,
        """
        from harnessc.runtime.core.hooks import PauseRequest

        def review(event):
            return PauseRequest("needs review")
        """,
    )
    hook = python_hook("after_step", f"{mod}:review", base_dir=tmp_path)
    harness, _ = make_harness(_one_call(), [echo_tool()], hooks=[hook])
    result = asyncio.run(harness.prompt("go"))
    assert result.status == "paused" and result.reason == "needs review"


def test_function_object_and_import_errors(tmp_path: Path) -> None:
    def local(event: Any) -> None:
        return None

    spec = python_hook("tool_call", local)
    assert spec.name and spec.name.startswith("python:")
    with pytest.raises(ImportError, match="no_such_module"):
        python_hook("tool_call", "no_such_module:f", base_dir=tmp_path)
    mod = _module(tmp_path, "x = 1\n")
    with pytest.raises((ImportError, TypeError)):
        python_hook("tool_call", f"{mod}:x", base_dir=tmp_path)
    with pytest.raises(ValueError):
        python_hook("tool_call", local, timeout_s=0)


def test_check_result_table() -> None:
    check_result("tool_call", ToolCallResult(block=True), "h")
    check_result("tool_call", {"block": True, "reason": "x"}, "h")
    check_result("tool_call", PauseRequest(), "h")
    check_result("context", ContextResult(messages=[]), "h")
    check_result("before_stop", {"continue": True, "message": "go on"}, "h")
    check_result("before_provider_payload", {"anything": 1}, "h")
    check_result("turn_end", None, "h")
    with pytest.raises(HookProtocolError, match="unknown keys"):
        check_result("tool_call", {"blok": True}, "h")
    with pytest.raises(HookProtocolError, match="block must be bool"):
        check_result("tool_call", {"block": "yes"}, "h")
    with pytest.raises(HookProtocolError, match="is_error must be bool"):
        check_result("tool_result", {"is_error": "no"}, "h")
    with pytest.raises(HookProtocolError):
        check_result("context", ToolCallResult(), "h")
    with pytest.raises(HookProtocolError):
        check_result("agent_end", "text", "h")


# -- block rules ---------------------------------------------------------------------


def test_block_rule(make_harness: Any) -> None:
    rule = block_rule(tool="echo|bash", pattern=r"rm\s+-rf\s+/", reason="refusing to delete")
    seen: list[dict[str, Any]] = []
    replies = [
        reply_tool_calls([("echo", {"text": "rm  -rf /"}), ("echo", {"text": "ls /"})]),
        reply_text("done"),
    ]
    harness, _ = make_harness(replies, [echo_tool(seen=seen)], hooks=[rule])
    asyncio.run(harness.prompt("go"))
    results = [m for m in harness.messages if isinstance(m, ToolResultMessage)]
    assert [r.text for r in results] == ["Tool call blocked: refusing to delete", "ls /"]
    assert seen == [{"text": "ls /"}]


def test_block_rule_matches_the_whole_tool_name_and_json(make_harness: Any) -> None:
    rule = block_rule(tool="ech", pattern='"text": "x"', reason="no")
    assert rule.handler.matches("echo", {"text": "x"}) is False
    rule = block_rule(tool="echo", pattern='"text": "x"', reason="no")
    assert rule.handler.matches("echo", {"text": "x"}) is True
    assert rule.handler.matches("echo", {"text": "y"}) is False
    assert rule.handler.matches("echo", {"text": "ü"}) is False
    assert block_rule("echo", "ü", "no").handler.matches("echo", {"text": "ü"}) is True


def test_block_rule_bad_arguments() -> None:
    with pytest.raises(ValueError, match="pattern"):
        block_rule("echo", "(", "no")
    with pytest.raises(ValueError, match="tool"):
        block_rule("[", "x", "no")
    with pytest.raises(ValueError, match="reason"):
        block_rule("echo", "x", "")
