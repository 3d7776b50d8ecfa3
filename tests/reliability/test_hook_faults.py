"""Hook faults: python hooks that raise, hang or return the wrong type; command hooks
that time out, exit 1, print invalid JSON or 100 MB. Each is contained and reported
as an error event; at tool_call a failed hook blocks the call (fail closed)."""

from __future__ import annotations

import asyncio
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from harnessc.runtime import AgentHarness, AgentHarnessOptions, EventLog, Model
from harnessc.runtime.extensions import command_hook, python_hook
from harnessc.runtime.providers.scripted import ScriptedProvider, reply_tool_calls
from tests.timing import scaled, slowdown

from ._kit import add_tool, processes_with

HOOKS_PY = textwrap.dedent(
    """
    import asyncio, threading, time

    def raises(event):
        raise RuntimeError("hook exploded")

    def hangs(event):
        threading.Event().wait(30)

    async def hangs_async(event):
        await asyncio.sleep(30)

    def wrong_type(event):
        return 42

    def wrong_dict(event):
        return {"blok": True}

    def returns_string(event):
        return "allow"

    def recursion(event):
        return recursion(event)

    def exits(event):
        raise SystemExit(3)

    def keyboard(event):
        raise KeyboardInterrupt

    async def exits_async(event):
        raise SystemExit(4)

    calls = []

    def records(event):
        calls.append(event.tool_name)
    """
)


@pytest.fixture
def hook_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "hookmods"
    folder.mkdir()
    # a unique module name per test: import_object caches modules by name
    (folder / f"relhooks_{tmp_path.name.replace('-', '_')}.py").write_text(HOOKS_PY)
    return folder


def _target(hook_dir: Path, func: str) -> str:
    (module,) = [p.stem for p in hook_dir.glob("relhooks_*.py")]
    return f"{module}:{func}"


def _run(hooks: list[Any]) -> tuple[Any, EventLog, float]:
    harness = AgentHarness(
        AgentHarnessOptions(
            models={"main": Model(id="scripted", api="scripted", provider="test")},
            tools=[add_tool()],
            provider=ScriptedProvider(
                [reply_tool_calls([("add", {"a": 2, "b": 3})]), "finished anyway"]
            ),
            hooks=hooks,
        )
    )
    log = EventLog()
    harness.subscribe(log)
    started = time.monotonic()
    result = asyncio.run(harness.prompt("add"))
    return result, log, time.monotonic() - started


def _tool_text(log: EventLog) -> tuple[str, bool]:
    (end,) = [e for e in log if e.type == "tool_execution_end"]
    return end.result.content[0].text, end.is_error


def _errors(log: EventLog) -> list[str]:
    return [e.message for e in log if e.type == "error"]


PYTHON_FAULTS = {
    "raises": "hook exploded",
    "hangs": "did not return within 0.3 s",
    "hangs_async": "did not return within 0.3 s",
    "wrong_type": "returned int",
    "wrong_dict": "unknown keys ['blok']",
    "returns_string": "returned str",
    "recursion": "RecursionError",
    "exits": "raised SystemExit(3)",
    "keyboard": "raised KeyboardInterrupt",
    "exits_async": "raised SystemExit(4)",
}


@pytest.mark.parametrize("func", list(PYTHON_FAULTS))
def test_python_tool_call_hook_failure_fails_closed(func: str, hook_dir: Path) -> None:
    hook = python_hook("tool_call", _target(hook_dir, func), base_dir=hook_dir, timeout_s=0.3)
    result, log, seconds = _run([hook])
    assert result.status == "done" and result.text == "finished anyway", result.reason
    text, is_error = _tool_text(log)
    assert is_error and text.startswith("Tool call blocked"), text
    assert PYTHON_FAULTS[func] in text
    assert any(PYTHON_FAULTS[func] in m for m in _errors(log)), _errors(log)
    assert seconds < scaled(3.0)


@pytest.mark.parametrize(
    "moment", ["tool_result", "turn_end", "context", "agent_start", "before_stop"]
)
@pytest.mark.parametrize("func", ["raises", "hangs", "wrong_type"])
def test_python_hook_failure_elsewhere_is_reported_and_ignored(
    moment: str, func: str, hook_dir: Path
) -> None:
    hook = python_hook(moment, _target(hook_dir, func), base_dir=hook_dir, timeout_s=0.3)
    result, log, seconds = _run([hook])
    assert result.status == "done" and result.text == "finished anyway", result.reason
    text, is_error = _tool_text(log)
    assert not is_error and text == "5"
    assert _errors(log), f"{func} at {moment} was not reported"
    assert seconds < scaled(3.0)


def test_hanging_python_hook_leaves_the_loop_responsive(hook_dir: Path) -> None:
    hook = python_hook("tool_call", _target(hook_dir, "hangs"), base_dir=hook_dir, timeout_s=0.5)

    async def go() -> tuple[Any, float]:
        harness = AgentHarness(
            AgentHarnessOptions(
                models={"main": Model(id="scripted", api="scripted", provider="test")},
                tools=[add_tool()],
                provider=ScriptedProvider([reply_tool_calls([("add", {"a": 1, "b": 1})]), "ok"]),
                hooks=[hook],
            )
        )
        ticks = 0

        async def tick() -> None:
            nonlocal ticks
            while True:
                await asyncio.sleep(0.01)
                ticks += 1

        ticker = asyncio.create_task(tick())
        started = time.monotonic()
        result = await harness.prompt("go")
        ticker.cancel()
        return result, ticks / max(time.monotonic() - started, 1e-9)

    result, rate = asyncio.run(go())
    assert result.status == "done"
    assert rate > 30 / slowdown()  # ~100 ticks a second when nothing blocks the loop


def _command(moment: str, command: str, tmp_path: Path, timeout_s: float = 5.0) -> Any:
    return command_hook(moment, command, timeout_s=timeout_s, cwd=tmp_path)


# name: (command, timeout_s, tool call blocked?, text in the result or error, reported?)
COMMAND_FAULTS = {
    "timeout": ("sleep 30.5", 0.3, True, "did not finish within 0.3 s", True),
    "invalid-json": ("echo '{not json'", 5.0, True, "malformed JSON", True),
    "invalid-json-array": ("echo '[1, 2'", 5.0, True, "malformed JSON", True),
    "100-mb-json-prefix": (
        "printf '{'; head -c 100000000 /dev/zero | tr '\\0' x",
        20.0,
        True,
        "malformed JSON",
        True,
    ),
    "100-mb-plain": ("yes | head -c 100000000", 20.0, False, "", False),
    "100-mb-stderr-exit-2": ("yes no | head -c 100000000 >&2; exit 2", 20.0, True, "no", False),
    "exit-1": ("echo broken >&2; exit 1", 5.0, False, "exited with code 1", True),
    # a guard that cannot run fails closed (it used to be "non-blocking" and let the call run)
    "exit-127": ("no-such-command-xyz", 5.0, True, "could not run (exit 127", True),
    "exit-126": ("/dev/null", 5.0, True, "could not run (exit 126", True),
    "killed-by-signal": ("kill -9 $$", 5.0, False, "exited with code -9", True),
    "closes-stdin-early": ("exec 0<&-; echo '{}'", 5.0, False, "", False),
}


@pytest.mark.parametrize("name", list(COMMAND_FAULTS))
def test_command_tool_call_hook_faults(name: str, tmp_path: Path) -> None:
    command, timeout_s, blocked, says, reported = COMMAND_FAULTS[name]
    result, log, seconds = _run([_command("tool_call", command, tmp_path, timeout_s)])
    assert result.status == "done" and result.text == "finished anyway", result.reason
    text, is_error = _tool_text(log)
    if blocked:
        assert is_error and text.startswith("Tool call blocked"), text
        assert says in text
        assert len(text) < 20_000  # a 100 MB reason is not handed to the model whole
    else:
        assert not is_error and text == "5", text
    if reported:
        assert any(says in m for m in _errors(log)), _errors(log)
    assert seconds < scaled(15.0)


def test_command_hook_timeout_kills_the_process_group(tmp_path: Path) -> None:
    tag = "29.0123"
    hook = _command("tool_call", f"(sleep {tag}) & sleep {tag}", tmp_path, 0.3)
    result, log, seconds = _run([hook])
    assert seconds < scaled(3.0)
    time.sleep(0.1)
    alive = processes_with(tag)
    assert not alive, "the timed-out hook's processes survived"


@pytest.mark.parametrize("moment", ["tool_result", "turn_end", "context"])
def test_failing_command_hooks_elsewhere_do_not_stop_the_run(moment: str, tmp_path: Path) -> None:
    hooks = [
        _command(moment, "sleep 30.6", tmp_path, 0.3),
        _command(moment, "echo '{bad'", tmp_path),
        _command(moment, "exit 1", tmp_path),
    ]
    result, log, seconds = _run(hooks)
    assert result.status == "done" and result.text == "finished anyway", result.reason
    text, is_error = _tool_text(log)
    assert not is_error and text == "5"
    assert len(_errors(log)) >= 3
    assert seconds < scaled(10.0)


def test_hook_module_that_fails_to_import_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "brokenhooks_rel.py").write_text("raise ImportError('nope')\n")
    with pytest.raises(ImportError) as info:
        python_hook("tool_call", "brokenhooks_rel:f", base_dir=tmp_path)
    assert "brokenhooks_rel" in str(info.value)
    with pytest.raises(ImportError) as info:
        python_hook("tool_call", "relhooks_missing_module:f", base_dir=tmp_path)
    assert "relhooks_missing_module" in str(info.value)
    sys.modules.pop("brokenhooks_rel", None)
