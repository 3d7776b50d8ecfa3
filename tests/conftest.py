"""Suite-wide set-up, done once before any test process starts (the tests may run in
several worker processes, which inherit the environment):

- isolation: HOME (and XDG_DATA_HOME below it) is a temporary folder, so a user-level
  context file (~/.config/harnessc/AGENTS.md) of the machine's user never reaches an
  agent under test, and the per-user data folder (sessions, logs) is the test run's own;
- bytecode: this checkout's harnessc is compiled once, before the workers start, into
  its ``__pycache__`` folders (git-ignored), so the hundreds of agent, server and CLI
  processes the tests start read it instead of compiling harnessc each (they run with
  ``PYTHONDONTWRITEBYTECODE``, which stops writing, not reading); the folders the run
  created are removed at its end;
- PostgreSQL: started when the tests to run include those that need it and
  ``HARNESSC_TEST_PG_DSN`` is not set. Its DSN reaches every worker through that variable;
  without a server, ``HARNESSC_TEST_PG_SKIP`` says why, and the tests that need one skip
  with that reason."""

from __future__ import annotations

import compileall
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NEEDS_PG = ROOT / "tests" / "durable"
_started: dict[str, str] = {}
_HOME = tempfile.TemporaryDirectory(prefix="harnessc-test-home-")
_PYCACHES: list[Path] = []


def _wants_pg(config: pytest.Config) -> bool:
    for arg in config.args or [str(ROOT / "tests")]:
        path = (Path(config.invocation_params.dir) / arg.split("::", 1)[0]).resolve()
        if path == NEEDS_PG or NEEDS_PG in path.parents or path in NEEDS_PG.parents:
            return True
    return False


def _terminated(signum: int, frame: object) -> None:
    raise KeyboardInterrupt("SIGTERM")


def pytest_configure(config: pytest.Config) -> None:
    # A terminated run (CI's time limit, `timeout`) ends as an interrupted one does, so
    # pytest_unconfigure still removes the temporary home and stops PostgreSQL.
    signal.signal(signal.SIGTERM, _terminated)
    os.environ["HOME"] = _HOME.name
    # the per-user data folder (sessions, logs, the durable database): the temporary home
    os.environ["XDG_DATA_HOME"] = os.path.join(_HOME.name, ".local", "share")
    if not hasattr(config, "workerinput"):
        _compile_harnessc()
    if hasattr(config, "workerinput") or os.environ.get("HARNESSC_TEST_PG_DSN"):
        return  # a worker (the controller did this), or a server given by the caller
    if not _wants_pg(config):
        return
    try:
        proc = subprocess.run(
            [str(ROOT / "scripts" / "pg-test-up")],
            capture_output=True,
            text=True,
            timeout=120,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        os.environ["HARNESSC_TEST_PG_SKIP"] = f"scripts/pg-test-up failed: {exc}"
        return
    if proc.returncode != 0:
        os.environ["HARNESSC_TEST_PG_SKIP"] = (
            f"no PostgreSQL could be started: {proc.stderr.strip()}"
        )
        return
    for line in proc.stdout.splitlines():
        words = shlex.split(line)
        if len(words) == 2 and words[0] == "export" and "=" in words[1]:
            key, _, value = words[1].partition("=")
            os.environ[key] = value
            if key == "HARNESSC_PG_STARTED":
                _started[key] = value


def _compile_harnessc() -> None:
    """harnessc's bytecode, written where every process looks (see the module doc).
    (A ``PYTHONPYCACHEPREFIX`` folder would not do: a process given one looks for the
    installed packages' bytecode there too, and compiles them all.)"""
    if sys.pycache_prefix is not None:
        return  # the caller keeps bytecode elsewhere: the processes look there
    package = ROOT / "harnessc"
    existing = {p.parent for p in package.rglob("*.py")}
    _PYCACHES.extend(d / "__pycache__" for d in existing if not (d / "__pycache__").exists())
    compileall.compile_dir(package, quiet=2, workers=0)


def pytest_unconfigure(config: pytest.Config) -> None:
    _HOME.cleanup()
    for folder in _PYCACHES:
        shutil.rmtree(folder, ignore_errors=True)
    if hasattr(config, "workerinput") or not _started:
        return
    subprocess.run(
        [str(ROOT / "scripts" / "pg-test-down")],
        env={**os.environ, **_started},
        timeout=120,
        stdin=subprocess.DEVNULL,
        check=False,
    )
