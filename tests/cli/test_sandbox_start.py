"""A machine that cannot enforce the sandbox (here: no bwrap on the PATH) says exactly
why: a spec that asks for the sandbox does not start, doctor names the reason, ``auto``
warns and runs without it, and the operator's ``--sandbox off`` runs without it."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from harnessc.testing import ProtocolServer
from harnessc.testing.demo import serve


def _run(args: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL"))}
    return subprocess.run(
        [sys.executable, "-c", "from harnessc.cli import main; main()", *args],
        cwd=cwd,
        env={**base, "PYTHONDONTWRITEBYTECODE": "1", **env},
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )


def test_a_machine_without_bwrap_says_why(tmp_path: Path) -> None:
    server: ProtocolServer = serve(port=0)
    try:
        assert _run(["new", "demo"], tmp_path).returncode == 0
        empty = tmp_path / "no-bwrap"
        empty.mkdir()
        url = f"{server.url}/v1"
        env = {"PATH": str(empty), "HARNESSC_BASE_URL": url}
        refused = _run(["run", "demo", "run echo hi"], tmp_path, **env)
        assert refused.returncode == 2, refused.stdout + refused.stderr
        assert (
            "the spec requires a sandbox and this machine cannot enforce it: bubblewrap (bwrap) "
            "is not on the PATH; install bubblewrap: `apt-get install bubblewrap`"
        ) in refused.stderr
        assert "Traceback" not in refused.stderr
        doctor = _run(["doctor", "demo"], tmp_path, **env)
        assert doctor.returncode == 1
        assert re.search(
            r"error +sandbox on: this machine cannot enforce it: bubblewrap", doctor.stdout
        )
        # the operator's explicit choice
        off = _run(["run", "demo", "--", "--sandbox", "off", "run echo hi"], tmp_path, **env)
        assert off.returncode == 0, off.stderr
        assert "hi" in off.stdout
        # auto: runs, and says it runs without one
        spec = tmp_path / "agents" / "demo.yaml"
        spec.write_text(spec.read_text().replace("  mode: on ", "  mode: auto "))
        auto = _run(["run", "demo", "run echo hi"], tmp_path, **env)
        assert auto.returncode == 0, auto.stderr
        assert (
            "[warning] sandbox: programs run WITHOUT a sandbox: bubblewrap (bwrap)" in auto.stderr
        )
    finally:
        server.stop()
