"""Tool faults: processes that ignore SIGTERM, 1 GB of output, stdin readers, files
changed by another process, a 2 GB file. The harness stays responsive (its event loop
keeps ticking), memory stays bounded, and abort ends the run within a second."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from harnessc.runtime import AgentHarness, AgentHarnessOptions, EventLog, Model, ToolContextSource
from harnessc.runtime.core.signal import AbortSignal
from harnessc.runtime.providers.scripted import ScriptedProvider, reply_tool_calls
from harnessc.runtime.tools import (
    create_bash_tool,
    create_edit_tool,
    create_grep_tool,
    create_read_tool,
)
from tests.timing import scaled

from ._kit import processes_with

REPO = Path(__file__).resolve().parents[2]


def agent(
    workspace: Path, calls: list[tuple[str, dict[str, Any]]], tools: list[Any]
) -> tuple[AgentHarness, EventLog]:
    harness = AgentHarness(
        AgentHarnessOptions(
            models={"main": Model(id="scripted", api="scripted", provider="test")},
            tools=tools,
            provider=ScriptedProvider([reply_tool_calls(calls), "after the tools"]),
            tool_context=ToolContextSource({"workspace": str(workspace)}),
        )
    )
    log = EventLog()
    harness.subscribe(log)
    return harness, log


class Ticker:
    """Measures the event loop's worst stall while a run is in progress."""

    def __init__(self) -> None:
        self.worst = 0.0
        self._task: asyncio.Task[None] | None = None

    async def _run(self) -> None:
        last = time.monotonic()
        while True:
            await asyncio.sleep(0.01)
            now = time.monotonic()
            self.worst = max(self.worst, now - last - 0.01)
            last = now

    def __enter__(self) -> Ticker:
        self._task = asyncio.get_running_loop().create_task(self._run())
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._task is not None
        self._task.cancel()


def _alive(tag: str) -> list[int]:
    return processes_with(tag)


def test_abort_kills_children_that_ignore_sigterm(tmp_path: Path) -> None:
    tag = "31.41592"
    command = (
        f"(trap '' TERM; sleep {tag}) & (trap '' TERM; sleep {tag}) & "
        f"trap '' TERM; echo started; sleep {tag}; wait"
    )
    harness, log = agent(tmp_path, [("bash", {"command": command})], [create_bash_tool()])

    async def go() -> tuple[Any, float, float]:
        with Ticker() as ticker:
            task = asyncio.create_task(harness.prompt("run it"))
            while len(_alive(tag)) < 3:
                await asyncio.sleep(0.02)
            await asyncio.sleep(0.1)
            started = time.monotonic()
            harness.abort()
            result = await task
            latency = time.monotonic() - started
        return result, latency, ticker.worst

    result, latency, stall = asyncio.run(go())
    print(
        f"\nabort with SIGTERM-ignoring children: {latency * 1000:.0f} ms, loop stall {stall * 1000:.0f} ms"
    )
    assert result.status == "aborted"
    assert latency < scaled(1.0), f"abort took {latency:.2f} s"
    assert stall < scaled(1.0)  # responsive within a second, even on a loaded 2-core machine
    deadline = time.monotonic() + scaled(2)
    while _alive(tag) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not _alive(tag), "children survived the abort"


def test_timeout_kills_children_that_ignore_sigterm(tmp_path: Path) -> None:
    tag = "27.1828"
    command = f"(trap '' TERM; sleep {tag}) & trap '' TERM; sleep {tag}"
    harness, log = agent(
        tmp_path, [("bash", {"command": command, "timeout": 0.3})], [create_bash_tool()]
    )
    started = time.monotonic()
    result = asyncio.run(harness.prompt("run it"))
    assert result.status == "done" and time.monotonic() - started < scaled(3.0)
    (end,) = [e for e in log if e.type == "tool_execution_end"]
    assert end.is_error and "timed out" in end.result.content[0].text
    time.sleep(0.1)
    assert not _alive(tag)


def test_command_reading_stdin_ends_at_once(tmp_path: Path) -> None:
    calls = [
        ("bash", {"command": "cat; echo cat-done"}),
        ("bash", {"command": "read line; echo read-exit=$?"}),
        ("bash", {"command": "python3 -c 'import sys; sys.stdin.read(); print(\"py-done\")'"}),
    ]
    harness, log = agent(tmp_path, calls, [create_bash_tool(timeout_s=10)])
    started = time.monotonic()
    result = asyncio.run(harness.prompt("run"))
    assert result.status == "done"
    assert time.monotonic() - started < scaled(3.0)
    texts = [e.result.content[0].text for e in log if e.type == "tool_execution_end"]
    assert any("cat-done" in t for t in texts)
    assert any("read-exit=1" in t for t in texts)
    assert any("py-done" in t for t in texts)


BIG_OUTPUT_CHILD = textwrap.dedent(
    """
    import asyncio, json, os, resource, sys, time
    from harnessc.runtime import AgentHarness, AgentHarnessOptions, Model
    from harnessc.runtime.providers.scripted import ScriptedProvider, reply_tool_calls
    from harnessc.runtime.tools import create_bash_tool

    def peak_mb():
        # VmHWM: this process's own peak; ru_maxrss would also count the parent's
        # resident size inherited through fork + exec
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    async def main():
        harness = AgentHarness(AgentHarnessOptions(
            models={"main": Model(id="s", api="scripted")},
            tools=[create_bash_tool()],
            provider=ScriptedProvider([reply_tool_calls([("bash", {"command": sys.argv[1]})]), "ok"]),
        ))
        ends = []
        harness.subscribe(lambda e: ends.append(e) if e.type == "tool_execution_end" else None)
        worst, stop = 0.0, False
        async def tick():
            nonlocal worst
            last = time.monotonic()
            while not stop:
                await asyncio.sleep(0.01)
                now = time.monotonic()
                worst = max(worst, now - last - 0.01)
                last = now
        ticker = asyncio.create_task(tick())
        started = time.monotonic()
        result = await harness.prompt("go")
        seconds = time.monotonic() - started
        stop = True
        await ticker
        end = ends[0].result
        details = end.details or {}
        path = details.get("full_output_path")
        size = os.path.getsize(path) if path else None
        if path:
            os.unlink(path)
        print(json.dumps({
            "status": result.status, "seconds": seconds, "stall": worst,
            "total_bytes": details.get("total_bytes"), "spill_size": size,
            "text_bytes": len(end.content[0].text.encode()),
            "maxrss_mb": peak_mb(),
        }))

    asyncio.run(main())
    """
)


def test_one_gigabyte_of_output_keeps_memory_bounded() -> None:
    proc = subprocess.run(
        [sys.executable, "-c", BIG_OUTPUT_CHILD, "yes | head -c 1G"],
        capture_output=True,
        text=True,
        timeout=scaled(60),
    )
    assert proc.returncode == 0, proc.stderr
    figures = json.loads(proc.stdout.strip().splitlines()[-1])
    print(
        f"\n1 GB of bash output: peak RSS {figures['maxrss_mb']:.0f} MB, "
        f"{figures['seconds']:.1f} s, loop stall {figures['stall'] * 1000:.0f} ms"
    )
    assert figures["status"] == "done"
    assert figures["total_bytes"] == 1 << 30
    assert figures["spill_size"] == 1 << 30  # the whole output stays readable on disk
    assert figures["text_bytes"] < 200_000  # the model sees a bounded tail
    assert figures["maxrss_mb"] < 120
    # responsive within a second on an idle machine
    assert figures["stall"] < scaled(1.0)


def _tool_run(tool: Any, params: dict[str, Any], workspace: Path) -> Any:
    return asyncio.run(
        tool.execute("c1", params, AbortSignal(), lambda _: None, {"workspace": str(workspace)})
    )


def test_edit_with_a_stale_view_refuses_and_keeps_the_other_change(tmp_path: Path) -> None:
    target = tmp_path / "f.py"
    target.write_text("a = 1\nb = 2\n")
    read = _tool_run(create_read_tool(), {"path": "f.py"}, tmp_path)
    assert "a = 1" in read.content[0].text
    # another process rewrites the line the model is about to edit
    subprocess.run(
        [sys.executable, "-c", f"open({str(target)!r}, 'w').write('a = 10\\nb = 2\\n')"], check=True
    )
    result = _tool_run(
        create_edit_tool(),
        {"path": "f.py", "edits": [{"old_text": "a = 1\n", "new_text": "a = 3\n"}]},
        tmp_path,
    )
    assert result.is_error and "Read the file again" in result.content[0].text
    assert target.read_text() == "a = 10\nb = 2\n"
    # a change elsewhere in the file is kept by an edit that still applies
    subprocess.run(
        [sys.executable, "-c", f"open({str(target)!r}, 'a').write('c = 3\\n')"], check=True
    )
    result = _tool_run(
        create_edit_tool(),
        {"path": "f.py", "edits": [{"old_text": "b = 2\n", "new_text": "b = 20\n"}]},
        tmp_path,
    )
    assert not result.is_error
    assert target.read_text() == "a = 10\nb = 20\nc = 3\n"


APPENDER = textwrap.dedent(
    """
    import sys, time
    path, count = sys.argv[1], int(sys.argv[2])
    for i in range(count):
        with open(path, "a") as f:
            f.write(f"line {i}\\n")
        time.sleep(0.004)
    """
)


def test_edits_while_another_process_appends(tmp_path: Path) -> None:
    target = tmp_path / "log.txt"
    target.write_text("HEAD 0\n")
    count = 250
    writer = subprocess.Popen([sys.executable, "-c", APPENDER, str(target), str(count)])
    tool = create_edit_tool()
    applied = refused = 0
    head = 0
    while writer.poll() is None:
        result = _tool_run(
            tool,
            {
                "path": "log.txt",
                "edits": [{"old_text": f"HEAD {head}\n", "new_text": f"HEAD {head + 1}\n"}],
            },
            tmp_path,
        )
        if result.is_error:
            refused += 1
            assert (
                "changed" in result.content[0].text
                or "Read the file again" in result.content[0].text
            )
        else:
            applied += 1
            head += 1
    writer.wait()
    lines = target.read_text().splitlines()
    kept = {line for line in lines if line.startswith("line ")}
    lost = count - len(kept)
    print(
        f"\nedits during appends: {applied} applied, {refused} refused, {lost} of {count} appended lines lost"
    )
    assert lines[0] == f"HEAD {head}"
    assert all(line.startswith(("line ", "HEAD ")) for line in lines)  # never a torn mix
    assert applied >= 3
    # The edit re-checks the file right before its atomic rename (without that check
    # about half the appended lines were lost). A write that lands between the check
    # and the rename, or through a descriptor opened on the old file, can still be lost:
    # about 1% of the lines here. A regression guard, not a guarantee.
    assert lost <= count // 10, f"{lost} appended lines were silently overwritten"


def _sparse(path: Path, head: bytes, size: int) -> Path:
    with path.open("wb") as fh:
        fh.write(head)
    os.truncate(path, size)
    return path


TOOLS_CHILD = textwrap.dedent(
    """
    import asyncio, json, resource, sys, time
    resource.setrlimit(resource.RLIMIT_AS, (768 << 20, 768 << 20))
    from harnessc.runtime.core.signal import AbortSignal
    from harnessc.runtime import tools

    def peak_mb():
        # VmHWM: this process's own peak; ru_maxrss would also count the parent's
        # resident size inherited through fork + exec
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    calls = json.loads(sys.argv[1])
    out = []
    for name, params in calls:
        tool = getattr(tools, f"create_{name}_tool")()
        started = time.monotonic()
        result = asyncio.run(tool.execute(
            "c", params, AbortSignal(), lambda _: None, {"workspace": sys.argv[2]}))
        out.append({
            "tool": name,
            "seconds": time.monotonic() - started,
            "is_error": result.is_error,
            "text": result.content[0].text[-2000:],
        })
    print(json.dumps({
        "results": out, "maxrss_mb": peak_mb(),
    }))
    """
)

TWO_GB = 2 << 30
TEXT_HEAD = b"".join(b"line %d needle\n" % i for i in range(3000))  # > the 8 KB binary sniff


def _tools_in_child(calls: list[tuple[str, dict[str, Any]]], workspace: Path) -> dict[str, Any]:
    """Run file tools in a child process whose address space is capped at 768 MB."""
    proc = subprocess.run(
        [sys.executable, "-c", TOOLS_CHILD, json.dumps(calls), str(workspace)],
        capture_output=True,
        text=True,
        timeout=scaled(90),
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_read_of_a_two_gigabyte_file(tmp_path: Path) -> None:
    _sparse(tmp_path / "zeros.bin", b"", TWO_GB)
    _sparse(tmp_path / "text.log", TEXT_HEAD, TWO_GB)
    out = _tools_in_child(
        [
            ("read", {"path": "zeros.bin"}),
            ("read", {"path": "text.log"}),
            ("read", {"path": "text.log", "offset": 2990}),
            ("read", {"path": "text.log", "offset": 3001}),
        ],
        tmp_path,
    )
    zeros, head, tail, past = out["results"]
    for r in out["results"]:
        print(f"\nread of a 2 GB file {r['tool']}: {r['seconds']:.2f} s", end="")
    print(f"\npeak RSS of the reads: {out['maxrss_mb']:.0f} MB")
    assert zeros["is_error"] and "binary" in zeros["text"]
    assert not head["is_error"] and "Use offset=" in head["text"]
    assert "line 2999 needle" in tail["text"] and "3001" in tail["text"]
    assert "alone is over" in past["text"]  # the 2 GB line itself is not shown
    assert out["maxrss_mb"] < 200


def test_other_file_tools_on_a_two_gigabyte_file(tmp_path: Path) -> None:
    _sparse(tmp_path / "big.txt", TEXT_HEAD, TWO_GB)
    (tmp_path / "small.txt").write_text("needle too\n")
    out = _tools_in_child(
        [
            ("grep", {"pattern": "needle", "limit": 5}),
            ("grep", {"pattern": "never-there"}),
            ("ls", {}),
            ("find", {"pattern": "*.txt"}),
            (
                "edit",
                {"path": "big.txt", "edits": [{"old_text": "line 1 needle", "new_text": "x"}]},
            ),
        ],
        tmp_path,
    )
    grep, grep_none, ls, find, edit = out["results"]
    print(
        f"\nfile tools on a 2 GB file: peak RSS {out['maxrss_mb']:.0f} MB, "
        + ", ".join(f"{r['tool']} {r['seconds']:.2f} s" for r in out["results"])
    )
    assert "needle" in grep["text"]
    assert "big.txt" in ls["text"] and "big.txt" in find["text"]
    assert edit["is_error"] and "edit works on files up to" in edit["text"]
    assert out["maxrss_mb"] < 200


@pytest.mark.parametrize(
    "call",
    [
        ("bash", {"command": "yes"}),  # endless output
        ("bash", {"command": "cat /dev/zero | tr '\\0' x"}),
        ("bash", {"command": "python3 -c 'import sys; sys.stdin.read()'; sleep 30"}),
        ("read", {"path": "text.log"}),  # 2 GB: scanning it takes a while
        ("grep", {"pattern": "never-there"}),
    ],
    ids=["yes", "zeros", "stdin-then-sleep", "read-2gb", "grep-2gb"],
)
def test_abort_during_a_heavy_tool_returns_within_a_second(
    call: tuple[str, dict[str, Any]], tmp_path: Path
) -> None:
    _sparse(tmp_path / "text.log", TEXT_HEAD, TWO_GB)
    tools = [create_bash_tool(), create_read_tool(), create_grep_tool()]
    harness, log = agent(tmp_path, [call], tools)

    async def go() -> tuple[Any, float, float, Any]:
        with Ticker() as ticker:
            task = asyncio.create_task(harness.prompt("go"))
            while not [e for e in log if e.type == "tool_execution_start"]:
                await asyncio.sleep(0.01)
            await asyncio.sleep(0.3)
            started = time.monotonic()
            harness.abort()
            result = await task
            latency = time.monotonic() - started
        fresh = await harness.prompt("next")  # the agent is usable again at once
        return result, latency, ticker.worst, fresh

    result, latency, stall, fresh = asyncio.run(go())
    print(
        f"\nabort during {call[0]} {call[1]}: {latency * 1000:.0f} ms, loop stall {stall * 1000:.0f} ms"
    )
    assert result.status == "aborted"
    assert latency < scaled(1.0), f"abort took {latency:.2f} s"
    assert stall < scaled(1.0)  # responsive within a second, even on a loaded 2-core machine
    assert fresh.status in ("done", "error")  # the script has no reply left: still an answer
