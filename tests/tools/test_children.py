"""The supervisor every command runs under (``children.py``): it is invisible to the
command (exit status, signals, environment) and takes away what would let a root command
read the agent's memory."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from harnessc.runtime.processes.children import supervised


def _run(argv: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        supervised(argv, env), capture_output=True, text=True, env=env, timeout=30
    )


def test_exit_code_and_death_by_signal_come_through() -> None:
    assert _run(["sh", "-c", "echo out; echo err >&2; exit 3"]).returncode == 3
    done = _run(["sh", "-c", "echo out; exit 0"])
    assert (done.returncode, done.stdout) == (0, "out\n")
    assert _run(["sh", "-c", "kill -TERM $$"]).returncode == -signal.SIGTERM
    assert _run(["sh", "-c", "kill -KILL $$"]).returncode == -signal.SIGKILL


def test_a_missing_program_is_exit_127_with_a_message() -> None:
    done = _run(["/no/such/program"])
    assert done.returncode == 127 and "cannot run /no/such/program" in done.stderr


def test_the_program_gets_default_signal_dispositions() -> None:
    # Python (the supervisor) ignores SIGPIPE: `yes | head` must not print EPIPE errors
    done = _run(["bash", "-c", "yes | head -c 10 >/dev/null; grep SigIgn /proc/self/status"])
    ignored = int(done.stdout.split()[1], 16)
    assert done.stderr == ""
    assert not ignored & (1 << (signal.SIGPIPE - 1) | 1 << (signal.SIGXFSZ - 1))


def test_the_environment_is_the_one_given() -> None:
    # Python sets LC_CTYPE at start in a C locale; the program must not see it
    env = {"PATH": os.environ["PATH"], "LC_ALL": "", "LANG": "C", "ONLY": "this"}
    printed = _run(["env"], env).stdout.splitlines()
    assert sorted(printed) == ["LANG=C", "LC_ALL=", "ONLY=this", f"PATH={env['PATH']}"]
    env["LC_CTYPE"] = "POSIX"
    assert "LC_CTYPE=POSIX" in _run(["env"], env).stdout.splitlines()


def test_its_own_group_and_signals_sent_to_it_alone_reach_the_program() -> None:
    process = subprocess.Popen(
        supervised(["sh", "-c", "echo $$ $(ps -o pgid= $$); exec sleep 30"]),
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    shell, group = (int(x) for x in process.stdout.readline().split())
    assert group == process.pid and shell != process.pid  # the supervisor leads it
    process.terminate()
    assert process.wait(timeout=10) == -signal.SIGTERM
    process.stdout.close()


def test_an_agent_gone_before_the_supervisor_starts_runs_nothing() -> None:
    argv = supervised(["sh", "-c", "echo ran"])
    argv[argv.index("--") - 2] = "1"  # a parent that is not the one it was started by
    done = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    assert done.returncode == -signal.SIGKILL and done.stdout == ""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux capabilities")
def test_no_ptrace_capability_for_the_program() -> None:
    status = _run(["cat", "/proc/self/status"]).stdout
    caps = {
        line.split(":")[0]: int(line.split()[1], 16)
        for line in status.splitlines()
        if line.startswith("Cap")
    }
    held = caps["CapEff"] | caps["CapPrm"] | caps["CapAmb"]
    if os.geteuid() == 0:  # root would get the capability back from the bounding set
        held |= caps["CapBnd"]
    assert not held & (1 << 19)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="prctl and /proc")
def test_protect_secrets_blanks_credentials_in_the_startup_environment() -> None:
    """/proc/<pid>/environ shows the environment the process started with: after
    protect_secrets it holds no credential value, while the process and its children
    still see every value."""
    script = textwrap.dedent(
        """\
        import ctypes, os, subprocess, sys
        from harnessc.runtime.processes.children import protect_secrets
        from harnessc.runtime.support.secrets import register_secret_names
        assert protect_secrets()
        register_secret_names(["PLAINNAME"])  # a model's api_key_env, known later
        assert protect_secrets()
        libc = ctypes.CDLL(None)
        libc.getenv.restype = ctypes.c_char_p
        libc.prctl.restype = ctypes.c_int
        child = subprocess.run(["sh", "-c", "echo $CHILD_TOKEN"], capture_output=True)
        print(repr((
            os.environ["CHILD_TOKEN"], libc.getenv(b"CHILD_TOKEN"), child.stdout,
            open("/proc/self/environ", "rb").read().split(b"\\0"),
            libc.prctl(3, 0, 0, 0, 0),
        )))
        """
    )
    env = {**os.environ, "CHILD_TOKEN": "tok-12345678", "HARMLESS": "tok-12345678x"}
    env["PLAINNAME"] = "plain-secret-value"
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=30
    )
    assert done.returncode == 0, done.stderr
    value, from_c, inherited, block, dumpable = eval(done.stdout)  # noqa: S307 - our repr
    assert value == "tok-12345678" and from_c == b"tok-12345678"
    assert inherited == b"tok-12345678\n"
    assert b"CHILD_TOKEN=" in block and b"HARMLESS=tok-12345678x" in block
    assert b"PLAINNAME=" in block and not any(b"plain-secret-value" in e for e in block)
    assert not any(b"tok-12345678" in entry and b"HARMLESS" not in entry for entry in block)
    assert dumpable == 0


def test_the_command_group_is_gone_soon_after_the_agent() -> None:
    """A parent killed by SIGKILL: the supervisor kills the whole group."""
    script = textwrap.dedent(
        """\
        import subprocess, sys
        from harnessc.runtime.processes.children import supervised
        process = subprocess.Popen(supervised(["sh", "-c", "sleep 300 & echo $!; sleep 300"]),
                                   stdout=subprocess.PIPE, text=True)
        print(process.pid, process.stdout.readline().strip(), flush=True)
        sys.stdin.read()
        """
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    agent = subprocess.Popen(
        [sys.executable, "-c", script],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert agent.stdout is not None
    group, background = (int(x) for x in agent.stdout.readline().split())
    try:
        agent.kill()
        agent.wait(timeout=10)
        deadline = time.monotonic() + 10
        while _running(background) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert not _running(background)
    finally:
        try:
            os.killpg(group, signal.SIGKILL)
        except ProcessLookupError:
            pass
        agent.stdout.close()
        if agent.stdin is not None:
            agent.stdin.close()


def _running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False
