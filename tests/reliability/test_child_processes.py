"""What the agent's children can do to it: read its API key through /proc, or outlive it.

A generated agent runs as a process, like a user runs it, against the local protocol
server; its bash tool and its command hooks run a probe that walks up its ancestors and
tries every /proc path to their environment and memory. Then the agent is SIGKILLed
while a bash command and a hook each have a process group running: nothing of either
may survive it.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from harnessc.compiler.render import compile as compile_specs
from harnessc.spec.load import load_spec
from harnessc.testing import (
    ProtocolServer,
    ScriptedResponse,
    openai_events,
    openai_tool_call_events,
)

MARK = "PROCS-SENTINEL"
KEY = f"sk-{MARK}-5e1d0c9b8a7f"

# Tries every /proc path to every ancestor's environment and memory; prints one line
# per path ("<pid> <what>: denied" or "<pid> <what>: read ..."), and any secret it finds.
PROBE = textwrap.dedent(
    f"""\
    import glob, os, re
    found = re.compile(b"sk" + rb"-{MARK}[\\w-]*")  # not one literal: the probe's text is no hit

    def report(pid, what, path):
        try:
            with open(path, "rb") as fh:
                data = fh.read()
        except OSError as exc:
            print(pid, what + ": denied", exc.errno)
            return
        hits = set(found.findall(data))
        print(pid, what + ": read", len(data), "bytes", b" ".join(hits).decode())

    def memory(pid):
        try:
            with open(f"/proc/{{pid}}/maps") as fh:
                regions = [line.split()[0] for line in fh if line.split()[1][0] == "r"]
            mem = open(f"/proc/{{pid}}/mem", "rb")
        except OSError as exc:
            print(pid, "mem: denied", exc.errno)
            return
        hits = set()
        with mem:
            for region in regions:
                start, end = (int(x, 16) for x in region.split("-"))
                try:
                    mem.seek(start)
                    hits.update(found.findall(mem.read(min(end - start, 1 << 26))))
                except (OSError, ValueError, OverflowError):
                    pass
        print(pid, "mem: read", b" ".join(hits).decode())

    pid = os.getpid()
    while pid > 1:
        with open(f"/proc/{{pid}}/stat") as fh:
            pid = int(fh.read().rsplit(")", 1)[1].split()[1])
        report(pid, "environ", f"/proc/{{pid}}/environ")
        report(pid, "dotdot", f"/proc/self/../{{pid}}/environ")
        for task in sorted(glob.glob(f"/proc/{{pid}}/task/*")):
            report(pid, "task-environ", task + "/environ")
        memory(pid)
    """
)

SPEC = {
    "version": 1,
    "name": "children",
    "models": {
        "main": {
            "provider": "openai",
            "id": "m",
            "base_url": "${PROCS_BASE_URL}",
            "api_key_env": "PROCS_MODEL_KEY",
        }
    },
    "tools": ["bash"],
    "session": {"dir": "sessions"},
    # The protections of a program run without the sandbox (process groups, /proc): the
    # sandbox's own pid namespace and --die-with-parent are tested in tests/sandbox.
    "sandbox": "off",
}


@pytest.fixture(scope="module")
def server() -> Iterator[ProtocolServer]:
    with ProtocolServer() as running:
        yield running


def _build(root: Path, hooks: dict[str, Any], tools: list[Any] | None = None) -> Path:
    spec = root / "agents" / "children.yaml"
    spec.parent.mkdir(exist_ok=True)
    spec.write_text(yaml.safe_dump({**SPEC, "hooks": hooks, "tools": tools or SPEC["tools"]}))
    loaded = load_spec(spec)
    assert not [d for d in loaded.diagnostics if d.severity == "error"], loaded.diagnostics
    out = root / "generated"
    for name, text in compile_specs(loaded, out).items():
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        (out / name).write_text(text)
    return out / "children.py"


def _env(server: ProtocolServer) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PROCS_")}
    env.update(
        PROCS_BASE_URL=f"{server.url}/v1",
        PROCS_MODEL_KEY=KEY,
        PYTHONDONTWRITEBYTECODE="1",
    )
    return env


def _probe_run(
    module: Path, server: ProtocolServer, cwd: Path
) -> tuple[subprocess.Popen[str], str, str]:
    """Run the built agent on "probe" to its end; it must succeed."""
    agent = subprocess.Popen(
        [sys.executable, str(module), "probe"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(server),
        cwd=cwd,
    )
    out, err = agent.communicate(timeout=60)
    assert agent.returncode == 0, err
    return agent, out, err


def _bash_call(command: str) -> ScriptedResponse:
    arguments = json.dumps({"command": command})
    return ScriptedResponse.sse(openai_tool_call_events([("c1", "bash", arguments)]))


def _tool_result(request: Any) -> str:
    (content,) = [m["content"] for m in request.json["messages"] if m.get("role") == "tool"]
    return content if isinstance(content, str) else json.dumps(content)


def _assert_probe_found_nothing(report: str, agent: int, *, denied: tuple[str, ...]) -> None:
    """The probe tried every path of the agent; none showed the key, ``denied`` not even
    opened."""
    assert MARK not in report, report
    lines = report.splitlines()
    for what in ("environ", "dotdot", "task-environ", "mem"):
        assert any(line.startswith(f"{agent} {what}: ") for line in lines), (what, report)
    for what in denied:
        assert all(
            line.startswith(f"{agent} {what}: denied")
            for line in lines
            if line.startswith(f"{agent} {what}: ")
        ), (what, report)


def test_children_cannot_read_the_agent_key_through_proc(
    tmp_path: Path, server: ProtocolServer
) -> None:
    server.reset()
    probe = tmp_path / "probe.py"
    probe.write_text(PROBE)
    hook_report = tmp_path / "hook-probe.txt"
    module = _build(
        tmp_path,
        {"tool_call": [{"command": f"{sys.executable} {probe} > {hook_report} 2>&1"}]},
    )
    server.enqueue(
        _bash_call(f"{sys.executable} {probe}"), ScriptedResponse.sse(openai_events(["done"]))
    )
    agent, out, err = _probe_run(module, server, tmp_path)
    assert MARK not in out + err
    # root without CAP_SYS_PTRACE may still open environ (blanked), never the memory
    denied = ("mem",) if os.geteuid() == 0 else ("environ", "dotdot", "task-environ", "mem")
    _assert_probe_found_nothing(_tool_result(server.requests[1]), agent.pid, denied=denied)
    _assert_probe_found_nothing(hook_report.read_text(), agent.pid, denied=denied)


# A python tool that starts a program itself, not through the runtime's supervisor: the
# agent must already be protected when its first tool runs (the guard is taken once the
# agent is built, not when the first supervised child starts).
PYTHON_TOOL = textwrap.dedent(
    """\
    import subprocess
    import sys


    def run_probe(path: str) -> str:
        \"\"\"Runs the probe script at path; its report goes to path + ".out".\"\"\"
        with open(path + ".out", "w") as out:
            subprocess.run([sys.executable, path], stdout=out, stderr=subprocess.STDOUT)
        return "probed"
    """
)


def test_a_python_tools_own_child_cannot_read_the_agent_key_in_its_environment(
    tmp_path: Path, server: ProtocolServer
) -> None:
    server.reset()
    probe = tmp_path / "probe.py"
    probe.write_text(PROBE)
    (tmp_path / "agents").mkdir()
    (tmp_path / "agents" / "probe_tool.py").write_text(PYTHON_TOOL)
    module = _build(tmp_path, {}, tools=[{"python": "probe_tool:run_probe"}])
    arguments = json.dumps({"path": str(probe)})
    server.enqueue(
        ScriptedResponse.sse(openai_tool_call_events([("c1", "run_probe", arguments)])),
        ScriptedResponse.sse(openai_events(["done"])),
    )
    agent, out, err = _probe_run(module, server, tmp_path)
    assert _tool_result(server.requests[1]) == "probed"
    # (a file: what reaches the model has the key's value redacted already)
    report = Path(f"{probe}.out").read_text()
    # The child keeps the user's capabilities (it is not the supervisor's), so root may
    # read the memory; the environment block, which every reader of /proc sees, is blank.
    for what in ("environ", "dotdot", "task-environ"):
        lines = [line for line in report.splitlines() if line.startswith(f"{agent.pid} {what}: ")]
        assert lines, (what, report)
        assert all(MARK not in line for line in lines), (what, report)


SETPRIV = shutil.which("setpriv")


@pytest.mark.skipif(
    os.geteuid() != 0 or SETPRIV is None, reason="needs root and setpriv to start another user"
)
def test_children_of_an_unprivileged_agent_cannot_read_its_key() -> None:
    """The usual case: agent and command run as the same ordinary user. (The user keeps
    CAP_DAC_READ_SEARCH only so that it can reach this Python, wherever it is installed:
    that capability reads files, it does not get past a non-dumpable process.)"""
    script = textwrap.dedent(
        f"""\
        import asyncio, shlex, sys
        from harnessc.runtime.core.signal import AbortSignal
        from harnessc.runtime.tools import create_bash_tool
        command = sys.executable + " -c " + shlex.quote({PROBE!r})
        result = asyncio.run(create_bash_tool().run(
            "c1", {{"command": command}}, AbortSignal(), lambda update: None, {{"cwd": "/tmp"}}))
        print(result.content[0].text)
        """
    )
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "PYTHONPATH": os.pathsep.join(p for p in sys.path if p),
        "PROCS_MODEL_KEY": KEY,
        "HOME": "/tmp",
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    assert SETPRIV is not None
    caps = "+dac_read_search"
    agent = subprocess.Popen(
        [SETPRIV, "--reuid=65534", "--regid=65534", "--clear-groups", f"--inh-caps={caps}"]
        + [f"--ambient-caps={caps}", sys.executable, "-c", script],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd="/tmp",
    )
    out, err = agent.communicate(timeout=60)
    assert agent.returncode == 0, err
    everything = ("environ", "dotdot", "task-environ", "mem")
    _assert_probe_found_nothing(out, agent.pid, denied=everything)  # setpriv execs: same pid


def _group_members(pgid: int) -> list[int]:
    """Processes of group ``pgid`` that are still running (zombies do not count)."""
    members = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] not in ("Z", "X"):
            members.append(int(entry))
    return members


def _wait_for(path: Path, timeout: float) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().strip():
            return path.read_text().strip()
        time.sleep(0.02)
    raise AssertionError(f"{path} never written")


@pytest.mark.parametrize("where", ["bash", "hook"])
def test_a_sigkilled_agent_takes_its_running_commands_with_it(
    where: str, tmp_path: Path, server: ProtocolServer
) -> None:
    server.reset()
    started = tmp_path / "started"
    marker = tmp_path / "marker"
    # a background child that writes the marker after a while, and a long foreground
    command = f"(sleep 2; touch {marker}) & echo $$ > {started}; sleep 300"
    hooks = {"tool_call": [{"command": command, "timeout_s": 600}]} if where == "hook" else {}
    module = _build(tmp_path, hooks)
    server.enqueue(_bash_call(command if where == "bash" else "true"))
    agent = subprocess.Popen(
        [sys.executable, str(module), "go"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=_env(server),
        cwd=tmp_path,
    )
    pgid = 0
    try:
        shell = int(_wait_for(started, 30))
        pgid = os.getpgid(shell)
        kill_at = time.monotonic()
        agent.kill()
        agent.wait(timeout=10)
        deadline = time.monotonic() + 10
        while _group_members(pgid) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert _group_members(pgid) == []
        time.sleep(max(0.0, kill_at + 2.5 - time.monotonic()))  # the marker's time has come
        assert not marker.exists()
    finally:
        if agent.poll() is None:
            agent.kill()
            agent.wait()
        if pgid:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pgid, signal.SIGKILL)
