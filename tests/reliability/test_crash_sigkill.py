"""SIGKILL at 200 random moments of a scripted multi-turn run with tools.

A fork server (crash_zygote.py) starts each run in a fresh child; the child reports
every completed turn (with the ids of the entries its session holds) on a pipe. After
the kill, the session must reopen valid, hold every reported entry, and an agent must
continue from it.
"""

from __future__ import annotations

import asyncio
import os
import random
import select
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from harnessc.runtime import AgentHarness, AgentHarnessOptions, Model
from harnessc.runtime.core.messages import AssistantMessage, ToolResultMessage, UserMessage
from harnessc.runtime.providers.scripted import ScriptedProvider
from harnessc.runtime.session import JsonlSessionRepo, SessionFileError

from ._kit import assert_session_valid

KILLS = int(os.environ.get("REL_KILLS", "200"))
ZYGOTE = Path(__file__).with_name("crash_zygote.py")


class Zygote:
    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(ZYGOTE)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            bufsize=0,
        )
        self.buffer = b""

    def line(self, timeout: float) -> str | None:
        """The next line, or None when ``timeout`` passes first."""
        assert self.proc.stdout is not None
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buffer:
            left = max(0.0, deadline - time.monotonic())
            ready, _, _ = select.select([self.proc.stdout], [], [], left)
            if not ready:
                return None
            chunk = os.read(self.proc.stdout.fileno(), 65536)
            if not chunk:
                raise RuntimeError("the fork server died")
            self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        return line.decode()

    def run(
        self, directory: Path, kill: tuple[int, float] | None
    ) -> tuple[list[str], bool, list[float]]:
        """Run one child; with ``kill=(turn, delay)`` SIGKILL it ``delay`` seconds after
        it reports that turn (turn 0: after the fork). Returns its lines, whether it was
        killed before finishing, and the times of its turn reports."""
        assert self.proc.stdin is not None
        started = time.monotonic()
        self.proc.stdin.write(f"run {directory}\n".encode())
        pid: int | None = None
        lines: list[str] = []
        stamps: list[float] = []
        killed = False
        deadline: float | None = None
        if kill is not None and kill[0] == 0:
            deadline = started + kill[1]
        while True:
            wait = 10.0 if deadline is None else max(0.0, deadline - time.monotonic())
            line = self.line(wait)
            if line is None:
                if deadline is not None and pid is not None:
                    try:
                        os.kill(pid, signal.SIGKILL)
                        killed = True
                    except ProcessLookupError:
                        pass
                    deadline = None
                    continue
                if deadline is not None:
                    deadline = time.monotonic() + 0.001  # the fork server has not named it yet
                    continue
                raise AssertionError(f"child {pid} hung; lines so far: {lines[-3:]}")
            if line.startswith("child "):
                pid = int(line.split()[1])
                continue
            if line.startswith("reaped "):
                status = int(line.split()[2])
                if killed and os.WIFSIGNALED(status):
                    return lines, True, stamps
                assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, (status, lines[-3:])
                return lines, False, stamps
            assert not line.startswith("crashed"), line
            lines.append(line)
            if line.startswith("turn "):
                stamps.append(time.monotonic() - started)
                if kill is not None and not killed and len(stamps) == kill[0]:
                    deadline = time.monotonic() + kill[1]

    def close(self) -> None:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(b"quit\n")
            self.proc.stdin.close()
        except BrokenPipeError:
            pass
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def _continue_from(path: str, reported: set[str]) -> int:
    """Reopen for writing, check the reported entries, run one more prompt on it."""
    repo = JsonlSessionRepo(Path(path).parents[1])
    session = repo.open(path)
    held = {e.id for e in session.entries()}
    missing = reported - held
    assert not missing, f"{path}: reported entries lost: {sorted(missing)}"
    for diagnostic in session.diagnostics:  # only a torn last line may be dropped
        assert "torn last line" in diagnostic, diagnostic
    before = session.context().messages
    provider = ScriptedProvider(["continued"])
    harness = AgentHarness(
        AgentHarnessOptions(
            session=session,
            models={"main": Model(id="scripted", api="scripted", provider="test")},
            provider=provider,
        )
    )
    assert harness.messages == before
    result = asyncio.run(harness.prompt("continue"))
    assert result.status == "done" and result.text == "continued", result.reason
    seen = provider.requests[0].context.messages
    assert len(seen) == len(before) + 1 and isinstance(seen[-1], UserMessage)
    session.close()
    lines = assert_session_valid(path)
    assert lines[-1]["message"]["content"][0]["text"] == "continued"
    # every tool call the continued agent saw answered, or repaired on the wire
    calls = {c.id for m in before if isinstance(m, AssistantMessage) for c in m.tool_calls}
    answered = {m.tool_call_id for m in before if isinstance(m, ToolResultMessage)}
    return len(calls - answered)


def test_sigkill_at_random_moments(tmp_path: Path) -> None:
    rng = random.Random(20261130)
    zygote = Zygote()
    outcomes: Counter[str] = Counter()
    dangling = 0
    try:
        gaps: dict[int, list[float]] = {}
        for warmup in range(4):  # the first fork also pays for lazy imports
            lines, killed, stamps = zygote.run(tmp_path / f"calibrate{warmup}", None)
            assert not killed and lines[-1] == "finished"
            if warmup:
                for turn, (a, b) in enumerate(zip([0.0, *stamps], stamps, strict=False)):
                    gaps.setdefault(turn, []).append(b - a)
        full_turns = sum(1 for line in lines if line.startswith("turn "))
        # median time from the report of turn k (k=0: the fork) to the next report
        gap = {k: sorted(v)[len(v) // 2] for k, v in gaps.items()}
        gap[full_turns] = gap[full_turns - 1]
        verify_s = 0.0
        for trial in range(KILLS):
            directory = tmp_path / f"t{trial}"
            # a random moment: after a random turn report, a random part of that turn
            # later (up to 1.5 turns, so some kills land in the next turn too)
            turn = rng.randrange(full_turns + 1)
            kill = (turn, rng.uniform(0, 1.5 * gap[turn]))
            lines, killed, _ = zygote.run(directory, kill)
            paths = [line.split(" ", 1)[1] for line in lines if line.startswith("path ")]
            turns = [line.split()[1:] for line in lines if line.startswith("turn ")]
            if not paths:
                outcomes["killed before the session existed"] += 1
                for leftover in (directory / "sessions").rglob("*.jsonl"):
                    try:  # a header cut short is refused with a clear error
                        JsonlSessionRepo(directory / "sessions").open(
                            str(leftover), read_only=True
                        ).close()
                    except SessionFileError as exc:
                        assert str(leftover) in str(exc)
                continue
            reported = set(turns[-1][1:]) if turns else set()
            t = time.monotonic()
            dangling += _continue_from(paths[0], reported) > 0
            verify_s += time.monotonic() - t
            if not killed:
                outcomes["finished before the kill"] += 1
            else:
                outcomes[f"killed after {len(turns)}/{full_turns} turns"] += 1
    finally:
        zygote.close()
    assert sum(outcomes.values()) == KILLS
    print(
        f"\nSIGKILL: {KILLS} kills in runs of {sum(gap.values()) * 1000:.0f} ms; "
        f"{dict(sorted(outcomes.items()))}; {dangling} reopened mid tool batch; verify {verify_s:.1f} s"
    )
