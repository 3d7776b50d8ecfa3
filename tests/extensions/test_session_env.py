"""CLAUDE_ENV_FILE: the export lines a SessionStart hook writes, read without a shell."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from harnessc.runtime.core.messages import ToolResultMessage
from harnessc.runtime.core.options import ToolContextSource
from harnessc.runtime.extensions import claude_settings_hooks
from harnessc.runtime.extensions.session_env import parse_env_file
from harnessc.runtime.providers.scripted import reply_text, reply_tool_calls
from harnessc.runtime.tools.bash import create_bash_tool


def test_export_lines_are_read_as_bash_reads_them() -> None:
    text = "\n".join(
        [
            "# written by a hook",
            "",
            "export A=plain",
            'export B=\'single $A quoted\' C="double $A ${A}s \\"q\\" \\$A"',
            "export D=back\\ slash E=~/bin F=",
            "  export G=$MISSING.x   # trailing comment",
            "export H",
            'export PATH="/opt/x/bin:$PATH"',
        ]
    )
    found = parse_env_file(text, {"PATH": "/usr/bin", "HOME": "/home/u"})
    assert found.values == {
        "A": "plain",
        "B": "single $A quoted",
        "C": 'double plain plains "q" $A',
        "D": "back slash",
        "E": "/home/u/bin",
        "F": "",
        "G": ".x",
        "PATH": "/opt/x/bin:/usr/bin",
    }
    assert found.warnings == []


def test_lines_that_need_a_shell_are_ignored_with_a_warning() -> None:
    text = "\n".join(
        [
            "export A=$(whoami)",
            "export B=`id`",
            "export C=1; rm -rf ~",
            "export D='unclosed",
            "E=1",
            "source ~/.profile",
            "export F=ok > /tmp/x",
            "export G=fine",
        ]
    )
    found = parse_env_file(text, {})
    assert found.values == {"G": "fine"}
    assert [w.split(" ", 2)[1] for w in found.warnings] == ["1", "2", "3", "4", "5", "6", "7"]


def test_env_file_merges_into_a_mapping_tool_context(
    make_harness: Any, tmp_path: Path, script: Any
) -> None:
    hook = script(
        "env.sh", "set -u\necho 'export FROM_HOOK=hook SHARED=hook' >> \"$CLAUDE_ENV_FILE\"\n"
    )
    settings = tmp_path / "settings.json"
    settings.write_text(
        json.dumps({"hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": hook}]}]}})
    )
    context = {"cwd": str(tmp_path), "env": {"FROM_SPEC": "spec", "SHARED": "spec"}}
    command = 'echo "$FROM_HOOK $FROM_SPEC $SHARED $(pwd)"'
    harness, _ = make_harness(
        [reply_tool_calls([("bash", {"command": command})]), reply_text("ok")],
        [create_bash_tool()],
        hooks=claude_settings_hooks(settings),
        tool_context=ToolContextSource(context),
    )
    asyncio.run(harness.prompt("go"))
    [result] = [m for m in harness.messages if isinstance(m, ToolResultMessage)]
    assert result.text.strip() == f"hook spec hook {tmp_path}"
