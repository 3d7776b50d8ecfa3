"""Running the shell blocks of the README and docs/ as a reader would paste them.

A block is read line by line (``# comment`` stripped) and run in one simulated shell:
``cd``, ``export`` and ``unset`` change the state the next lines run in, a line ending
in ``&`` starts a background job (``kill %1`` stops it), and every other line runs with
``bash -c`` in the current folder. ``harnessc`` is this checkout's (a shim first on
PATH), the demo model's port 8765 becomes the test's own, and ``CALL_ID`` is the id the
previous pause printed (``id=...``). Nothing outlives the block.
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["Shell", "Step", "free_port", "shell_block", "shell_lines"]

REPO = Path(__file__).resolve().parents[2]
DEMO_PORT = "8765"


def shell_block(text: str, after: str, lang: str = "bash") -> str:
    """The first fenced ``lang`` block after the line containing ``after``."""
    start = text.index(after)
    match = re.search(rf"```{lang}\n(.*?)```", text[start:], re.S)
    assert match, f"no ```{lang} block after {after!r}"
    return match.group(1)


def shell_lines(block: str) -> Iterator[tuple[str, str]]:
    """``(command, comment)`` of every command line of ``block``."""
    for raw in block.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        command, comment = line, ""
        # a comment starts at "  #" outside quotes (the blocks never quote a "#")
        found = re.search(r"\s{2,}#\s?", line)
        if found:
            command, comment = line[: found.start()].strip(), line[found.end() :].strip()
        yield command, comment


@dataclass
class Step:
    command: str
    comment: str
    returncode: int
    stdout: str
    stderr: str


@dataclass
class Shell:
    """The simulated shell a block runs in (see the module docstring)."""

    cwd: Path
    port: int
    tmp: Path
    env: dict[str, str] = field(default_factory=dict)
    jobs: list[subprocess.Popen[bytes]] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)

    def __post_init__(self) -> None:
        shims = self.tmp / "bin"
        shims.mkdir(exist_ok=True)
        shim = shims / "harnessc"
        shim.write_text(
            f"#!/bin/sh\nexec {shlex.quote(sys.executable)} -c "
            "'from harnessc.cli import main; main()' \"$@\"\n"
        )
        shim.chmod(0o755)
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.endswith(("_API_KEY", "_BASE_URL")) and k != "COLUMNS"
        }
        path = env.get("PYTHONPATH", "")
        env.update(
            PATH=f"{shims}{os.pathsep}{env.get('PATH', '')}",
            PYTHONPATH=str(REPO) + (os.pathsep + path if path else ""),
            PYTHONDONTWRITEBYTECODE="1",
            TMPDIR=str(self.tmp),  # mktemp -d: below the test's own folder
            NO_COLOR="1",
        )
        self.env = {**env, **self.env}

    def _expand(self, command: str) -> str:
        command = command.replace(f":{DEMO_PORT}", f":{self.port}")
        command = command.replace(f"--port {DEMO_PORT}", f"--port {self.port}")
        if command.startswith("harnessc serve-demo") and "--port" not in command:
            command = command.replace(
                "harnessc serve-demo", f"harnessc serve-demo --port {self.port}"
            )
        if "CALL_ID" in command:
            found = [m for s in reversed(self.steps) for m in re.findall(r"id=(\S+)", s.stderr)]
            assert found, f"{command}: no pause printed a call id before it"
            command = command.replace("CALL_ID", found[0])
        return command

    def run(self, command: str, comment: str = "", timeout: float = 120) -> Step:
        command = self._expand(command)
        for part in (p.strip() for p in command.split("; ")):
            step = self._one(part, comment, timeout)
        self.steps.append(step)
        return step

    def _one(self, command: str, comment: str, timeout: float) -> Step:
        words = shlex.split(command)
        if words[0] == "cd" and len(words) == 2:
            where = subprocess.run(
                ["bash", "-c", f"cd {command[3:]} && pwd"],
                cwd=self.cwd,
                env=self.env,
                capture_output=True,
                text=True,
                check=True,
            )
            self.cwd = Path(where.stdout.strip())
            return Step(command, comment, 0, "", "")
        if words[0] == "export":
            name, _, value = command[len("export ") :].partition("=")
            self.env[name] = value
            return Step(command, comment, 0, "", "")
        if words[0] == "unset":
            for name in words[1:]:
                self.env.pop(name, None)
            return Step(command, comment, 0, "", "")
        if words[0] == "kill" and words[1].startswith("%"):
            job = self.jobs[int(words[1][1:]) - 1]
            os.killpg(job.pid, signal.SIGTERM)
            job.wait(timeout=30)
            return Step(command, comment, 0, "", "")
        if command.endswith("&"):
            job = subprocess.Popen(
                ["bash", "-c", command[:-1].strip()],
                cwd=self.cwd,
                env=self.env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
            self.jobs.append(job)
            self._wait_for_port()
            return Step(command, comment, 0, "", "")
        done = subprocess.run(
            ["bash", "-c", command],
            cwd=self.cwd,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )
        return Step(command, comment, done.returncode, done.stdout, done.stderr)

    def _wait_for_port(self) -> None:
        import socket

        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", self.port)) == 0:
                    return
            time.sleep(0.1)
        raise AssertionError(f"nothing listens on {self.port} after the background job")

    def close(self) -> None:
        for job in self.jobs:
            if job.poll() is None:
                os.killpg(job.pid, signal.SIGTERM)
                job.wait(timeout=30)


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
