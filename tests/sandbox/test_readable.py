"""What a sandboxed program needs from a folder the sandbox empties (/tmp): a hook's
script, an MCP server's program and folder, shown read-only as harnessc names them,
and nothing else of that folder."""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
import tempfile
from pathlib import Path

from harnessc.runtime.extensions.command_hooks import run_hook_command
from harnessc.runtime.mcp.stdio import spawn
from harnessc.runtime.sandbox import SandboxPolicy
from harnessc.runtime.sandbox.layout import resolve_layout

from .conftest import SECRET, World


def _tmp_folder() -> tuple[Path, Path]:
    """A spec folder in /tmp with a hook script, and beside it a file nobody named."""
    base = Path(tempfile.mkdtemp(prefix="harnessc-readable-", dir="/tmp"))
    spec = base / "spec"
    spec.mkdir()
    hook = spec / "hook.sh"
    hook.write_text("#!/bin/sh\necho hook ran\n")
    hook.chmod(0o755)
    (spec / "server.py").write_text("print('server ran')\n")
    (base / "other.txt").write_text(f"OTHER {SECRET}\n")
    return base, spec


def test_the_layout_shows_what_is_named_under_tmp_and_only_that(world: World) -> None:
    base, spec = _tmp_folder()
    try:
        layout = resolve_layout(SandboxPolicy("on"), str(world.ws), str(spec), (str(spec),))
        assert layout.readable == (str(spec),)
        # outside the emptied folders nothing needs showing; the workspace is writable
        layout = resolve_layout(SandboxPolicy("on"), str(world.ws), None, (str(world.outside),))
        assert layout.readable == ()
    finally:
        shutil.rmtree(base)


def test_a_hook_script_in_tmp_runs_and_its_neighbours_stay_hidden(world: World) -> None:
    base, spec = _tmp_folder()
    try:
        done = asyncio.run(
            run_hook_command(
                f"{spec}/hook.sh; cat {base}/other.txt; echo x > {spec}/new",
                b"",
                cwd=str(world.ws),
                timeout_s=30,
                sandbox=world.policy(),
                readable=(str(spec),),
            )
        )
        said = (done.stdout + done.stderr).decode()
        assert "hook ran" in said
        assert SECRET not in said and "No such file" in said
        assert not (spec / "new").exists()  # shown read-only
    finally:
        shutil.rmtree(base)


def test_an_mcp_server_in_tmp_starts_in_the_sandbox(world: World) -> None:
    base, spec = _tmp_folder()

    async def go() -> str:
        process = await spawn(
            sys.executable,
            [str(spec / "server.py")],
            env=dict(os.environ),
            cwd=str(world.ws),
            sandbox=world.policy(),
            workspace=str(world.ws),
        )
        async with process:
            assert process.stdout is not None
            out = b""
            async for chunk in process.stdout:
                out += chunk
            await process.wait()
        return out.decode()

    try:
        assert asyncio.run(go()).strip() == "server ran"
    finally:
        shutil.rmtree(base)
