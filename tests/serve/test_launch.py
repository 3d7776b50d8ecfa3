"""Starting a server: ``harnessc serve SPEC`` and the message when the extra is missing."""

from __future__ import annotations

import subprocess
import sys
import time

import httpx

from tests.timing import scaled

from .servekit import AgentKit, free_port


def test_harnessc_serve_compiles_and_serves_a_spec(kit: AgentKit) -> None:
    spec = kit.module.parent.parent / "spec" / "helper.yaml"
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-c", "from harnessc.cli import main; main()", "serve", str(spec)]
        + ["--port", str(port), "--max-runs", "4", "--", "--no-session"],
        env=kit.env,
        cwd=kit.workdir,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.monotonic() + scaled(60)
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert process.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        models = httpx.get(f"http://127.0.0.1:{port}/v1/models").json()
        assert [m["id"] for m in models["data"]] == ["helper"]
    finally:
        process.terminate()
        output, _ = process.communicate(timeout=30)
    assert process.returncode == 0, output
    assert f"serving helper at http://127.0.0.1:{port} (sessions in memory" in output


def test_harnessc_serve_worker_needs_a_durable_spec(kit: AgentKit) -> None:
    spec = kit.module.parent.parent / "spec" / "helper.yaml"
    result = subprocess.run(
        [sys.executable, "-c", "from harnessc.cli import main; main()", "serve", str(spec)]
        + ["--worker"],
        capture_output=True,
        text=True,
        env=kit.env,
        cwd=kit.workdir,
        timeout=60,
    )
    assert result.returncode == 2, result.stderr
    assert "--worker serves a spec with durable:" in result.stderr


def test_serve_takes_no_session_flags(kit: AgentKit) -> None:
    result = subprocess.run(
        kit.command("--serve", "--continue"),
        capture_output=True,
        text=True,
        env=kit.env,
        cwd=kit.workdir,
        timeout=60,
    )
    assert result.returncode == 2
    assert "--serve starts or continues sessions per request" in result.stderr


def test_a_missing_extra_names_the_install_command(kit: AgentKit) -> None:
    code = (
        "import runpy, sys; sys.modules['uvicorn'] = None; "
        f"sys.argv = [{str(kit.module)!r}, '--serve']; "
        f"runpy.run_path({str(kit.module)!r}, run_name='__main__')"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=kit.env,
        cwd=kit.workdir,
        timeout=60,
    )
    assert result.returncode == 2, result.stderr
    assert "pip install 'harnessc[serve]'" in result.stderr
    assert "uvicorn" in result.stderr and "Traceback" not in result.stderr


def test_an_agent_that_is_not_served_never_imports_the_web_stack(kit: AgentKit) -> None:
    code = (
        "import runpy, sys\n"
        f"sys.argv = [{str(kit.module)!r}, 'hello']\n"
        "try:\n"
        f"    runpy.run_path({str(kit.module)!r}, run_name='__main__')\n"
        "except SystemExit as exc:\n"
        "    assert exc.code == 0, exc.code\n"
        "loaded = [m for m in ('starlette', 'uvicorn', 'a2a', 'ag_ui', 'harnessc.runtime.serve')"
        " if m in sys.modules]\n"
        "print('LOADED', loaded, file=sys.stderr)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=kit.env,
        cwd=kit.workdir,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert "echo: hello" in result.stdout
    assert "LOADED []" in result.stderr


def _collector_after_settling(before: str) -> list[str]:
    """In a child process (the collector is process-wide): ``before``, then
    ``settle_server``; what it returned, the young threshold, whether it froze more."""
    code = (
        "import gc\n"
        "from harnessc.runtime.support.collector import freeze_start_up, settle_server\n"
        f"{before}\n"
        "frozen = gc.get_freeze_count()\n"
        "made = [[i] for i in range(100)]\n"
        "settled = settle_server()\n"
        "print(settled, gc.get_threshold()[0], gc.get_freeze_count() > frozen, gc.isenabled())\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    return done.stdout.split()


def test_a_server_in_the_agents_own_process_freezes_its_start_and_collects_less_often() -> None:
    from harnessc.runtime.support.collector import SERVER_YOUNG_COLLECTION

    # the agent's own process froze its start-up (cli/start_up.StartUp)
    settled, young, froze, enabled = _collector_after_settling("freeze_start_up()")
    assert (settled, young, froze, enabled) == (
        "True",
        str(SERVER_YOUNG_COLLECTION),
        "True",
        "True",
    )


def test_a_program_serving_in_process_keeps_its_collector() -> None:
    # a program that serves the agent in-process, not the agent's own, even one that
    # froze objects itself (or whose first run did: support/collector.settle)
    assert _collector_after_settling("gc.set_threshold(500, 10, 10); gc.freeze()") == [
        "False",
        "500",
        "False",
        "True",
    ]
    # HARNESSC_GC_FREEZE=0: the collector as it is
    assert _collector_after_settling(
        "import os; os.environ['HARNESSC_GC_FREEZE'] = '0'; freeze_start_up()"
    ) == ["False", "700", "False", "True"]
    # a collector turned off stays off, with its thresholds
    assert _collector_after_settling("freeze_start_up(); gc.disable()") == [
        "False",
        "700",
        "False",
        "False",
    ]
