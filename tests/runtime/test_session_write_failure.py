"""A session that cannot be written (file size limit, disk full) ends the run with an
error naming the session file, not an "internal error"; what was written stays valid."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

SCRIPT = textwrap.dedent(
    """
    import json, resource, sys
    from harnessc.runtime import AgentHarness, AgentHarnessOptions, Model
    from harnessc.runtime.providers.scripted import ScriptedProvider, reply_text
    from harnessc.runtime.session import JsonlSessionRepo

    session = JsonlSessionRepo(sys.argv[1]).create(cwd=sys.argv[1])
    session.append_custom("note", {"pad": "x"})
    size = __import__("os").path.getsize(session.path)
    resource.setrlimit(resource.RLIMIT_FSIZE, (size + 2048, resource.RLIM_INFINITY))
    harness = AgentHarness(AgentHarnessOptions(
        session=session,
        models={"m": Model(id="m", api="scripted")},
        provider=ScriptedProvider([reply_text("y" * 100_000)]),
    ))
    result = harness.prompt_sync("hello")
    print(json.dumps({"status": result.status, "reason": result.reason, "path": session.path}))
    """
)


def test_a_full_session_file_is_a_named_session_error(tmp_path: Path) -> None:
    script = tmp_path / "run.py"
    script.write_text(SCRIPT)
    proc = subprocess.run(
        [sys.executable, str(script), str(tmp_path / "sessions")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.splitlines()[-1])
    assert out["status"] == "error"
    assert out["reason"].startswith("session error: "), out["reason"]
    assert "internal error" not in out["reason"]
    assert Path(out["path"]).name in out["reason"]
    for line in Path(out["path"]).read_text().splitlines():  # no torn line left behind
        json.loads(line)
