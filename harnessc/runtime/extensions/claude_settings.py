"""The hooks of a Claude Code settings file (``.claude/settings.json``), as they are.

A spec's ``hooks: {claude_settings: .claude/settings.json}`` runs every command hook
of the file's ``hooks`` table at the harnessc moment of its event
(``claude_events.CLAUDE_EVENTS``), with its matcher and its ``timeout`` (seconds;
Claude Code's default of 600). The file is read when the agent builds its options, so
an edit takes effect on the next start without a rebuild. Relative program paths
resolve against the project folder (the folder holding ``.claude/``). Other keys of the
file (permissions, env, ...) are ignored.

Refused (ClaudeSettingsError, so the agent does not start without a guard it was given):
a file that is missing or not JSON, a malformed ``hooks`` table, an event name Claude
Code does not have (``PreTooluse``: named with the event it probably means), and hook
types other than ``command`` (``prompt``, ``agent``, ``http``, ``mcp_tool``). Claude Code
events harnessc has no moment for (``SessionEnd``, ``SubagentStop``,
``PermissionRequest``, ...) are listed by ``unsupported_events`` (``harnessc check``
warns) and skipped.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harnessc.runtime.core.hooks import HookSpec
from harnessc.runtime.extensions.claude_events import CLAUDE_EVENTS, CLAUDE_EVENTS_WITHOUT_MOMENT
from harnessc.runtime.support.suggest import did_you_mean

__all__ = [
    "DEFAULT_SETTINGS_TIMEOUT_S",
    "ClaudeHookEntry",
    "ClaudeSettingsError",
    "claude_settings_hooks",
    "project_dir_of",
    "read_claude_settings",
    "unsupported_events",
]

DEFAULT_SETTINGS_TIMEOUT_S = 600.0


class ClaudeSettingsError(ValueError):
    """A settings file whose hooks cannot be taken as they are."""


@dataclass(frozen=True, slots=True)
class ClaudeHookEntry:
    event: str
    matcher: str | None
    command: str
    timeout_s: float
    where: str  # "hooks.PreToolUse[0].hooks[1]", for messages

    @property
    def supported(self) -> bool:
        return self.event in CLAUDE_EVENTS


def project_dir_of(settings: Path) -> Path:
    """``<project>/.claude/settings.json`` -> ``<project>``; else the file's folder."""
    folder = settings.parent
    return folder.parent if folder.name == ".claude" else folder


def _fail(path: Path, message: str) -> ClaudeSettingsError:
    return ClaudeSettingsError(f"Claude Code settings {os.fspath(path)}: {message}")


def _timeout(value: Any, path: Path, where: str) -> float:
    if value is None:
        return DEFAULT_SETTINGS_TIMEOUT_S
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise _fail(path, f"{where}.timeout must be a positive number of seconds")
    return float(value)


def read_claude_settings(path: str | os.PathLike[str]) -> list[ClaudeHookEntry]:
    """Every command hook of the file, in file order; ClaudeSettingsError when unusable."""
    file = Path(path)
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise _fail(file, "no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise _fail(file, f"cannot be read ({exc})") from None
    except json.JSONDecodeError as exc:
        raise _fail(file, f"not valid JSON ({exc.msg} at line {exc.lineno})") from None
    except RecursionError:
        raise _fail(file, "not usable JSON (nested too deeply)") from None
    if not isinstance(data, dict):
        raise _fail(file, "the file must hold a JSON object")
    table = data.get("hooks", {})
    if not isinstance(table, dict):
        raise _fail(file, "'hooks' must be an object of event names")
    out: list[ClaudeHookEntry] = []
    for event, groups in table.items():
        if event not in CLAUDE_EVENTS and event not in CLAUDE_EVENTS_WITHOUT_MOMENT:
            known = [*CLAUDE_EVENTS, *CLAUDE_EVENTS_WITHOUT_MOMENT]
            hint = did_you_mean(str(event), known) or f" (harnessc runs {', '.join(CLAUDE_EVENTS)})"
            raise _fail(
                file,
                f"hooks: unknown event {event!r}{hint} (refused rather than skipped: it "
                "may be a guard)",
            )
        if not isinstance(groups, list):
            raise _fail(file, f"hooks.{event} must be a list of matcher groups")
        for i, group in enumerate(groups):
            where = f"hooks.{event}[{i}]"
            if not isinstance(group, dict) or not isinstance(group.get("hooks"), list):
                raise _fail(file, f"{where} must be an object with a 'hooks' list")
            matcher = group.get("matcher")
            if matcher is not None and not isinstance(matcher, str):
                raise _fail(file, f"{where}.matcher must be a string")
            for j, hook in enumerate(group["hooks"]):
                at = f"{where}.hooks[{j}]"
                if not isinstance(hook, dict):
                    raise _fail(file, f"{at} must be an object")
                kind = hook.get("type", "command")
                if kind != "command":
                    raise _fail(
                        file,
                        f"{at} is a {kind!r} hook; harnessc runs only 'command' hooks "
                        "(refused rather than skipped: it may be a guard)",
                    )
                command = hook.get("command")
                if not isinstance(command, str) or not command.strip():
                    raise _fail(file, f"{at}.command must be a non-empty string")
                timeout = _timeout(hook.get("timeout"), file, at)
                out.append(ClaudeHookEntry(event, matcher, command, timeout, at))
    return out


def unsupported_events(entries: list[ClaudeHookEntry]) -> list[str]:
    return sorted({e.event for e in entries if not e.supported})


def claude_settings_hooks(
    path: str | os.PathLike[str], *, spec_dir: str | os.PathLike[str] | None = None
) -> list[HookSpec]:
    """HookSpecs for the command hooks of the settings file at ``path`` (relative paths
    start at ``spec_dir``)."""
    from harnessc.runtime.extensions.command_hooks import command_hook, resolve_program

    file = Path(path)
    if spec_dir is not None and not file.is_absolute():
        file = Path(spec_dir) / file
    project = os.fspath(project_dir_of(file.resolve()))
    specs: list[HookSpec] = []
    for entry in read_claude_settings(file):
        if not entry.supported:
            continue
        try:
            specs.append(
                command_hook(
                    CLAUDE_EVENTS[entry.event],
                    resolve_program(entry.command, project),
                    matcher=entry.matcher,
                    timeout_s=entry.timeout_s,
                    spec_dir=spec_dir,
                    event_name=entry.event,
                )
            )
        except ValueError as exc:
            raise _fail(file, f"{entry.where}: {exc}") from None
    return specs
