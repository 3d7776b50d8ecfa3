"""The example agents' own cases pass offline: `harnessc test agents/` as CI runs it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_the_example_cases_pass_against_their_cassettes() -> None:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}  # no key
    path = env.get("PYTHONPATH", "")
    env["PYTHONPATH"] = str(REPO) + (os.pathsep + path if path else "")
    env["OPENAI_BASE_URL"] = "http://127.0.0.1:9/v1"  # nothing listens: no request may go out
    result = subprocess.run(
        [sys.executable, "-c", "from harnessc.cli import main; main()", "test", "agents"],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "2 passed, 0 failed" in result.stdout
