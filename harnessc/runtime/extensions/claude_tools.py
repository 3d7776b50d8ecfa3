"""harnessc's built-in tools as Claude Code hooks see them: names and input shapes.

A command hook receives ``tool_name`` and ``tool_input`` as Claude Code would send them
for its own tool (``Bash`` with ``command``/``timeout`` in milliseconds, ``Write`` with an
absolute ``file_path`` and ``content``, ...), and an ``updatedInput`` it returns is mapped
back to the harnessc tool's arguments. Tools with no Claude Code counterpart (``todo``,
``finish``, python and external tools) keep their names and inputs unchanged.

===========  ===========  =====================================================
harnessc     Claude Code  input (harnessc -> Claude Code)
===========  ===========  =====================================================
bash         Bash         command; timeout (s -> ms); description if given
read         Read         path -> file_path (absolute); offset; limit
write        Write        path -> file_path (absolute); content
edit         Edit         path -> file_path; edits[0] -> old_string/new_string,
                          replace_all false; every edit also in ``edits``
                          (MultiEdit shape) when there are several
ls           LS           path (absolute; default the working folder); limit
grep         Grep         pattern; path (absolute); glob; ignore_case -> -i;
                          context -> -C; limit -> head_limit; output_mode
                          "content"; literal kept
find         Glob         pattern; path (absolute); limit kept
===========  ===========  =====================================================
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from harnessc.runtime.core import catalog

__all__ = [
    "CLAUDE_TOOL_NAMES",
    "ToolMappingError",
    "claude_tool_input",
    "claude_tool_name",
    "claude_tool_names",
    "harnessc_tool_input",
]

CLAUDE_TOOL_NAMES: dict[str, str] = {
    entry.name: entry.claude_code_name for entry in catalog.TOOLS if entry.claude_code_name
}
# The sub-agent hand-over tool: Claude Code's Agent, with the same input fields.
HANDOVER = "task"
CLAUDE_TOOL_NAMES[HANDOVER] = "Agent"
# Other names a matcher may give a tool under (Claude Code's older ones).
CLAUDE_OLD_NAMES: dict[str, str] = {HANDOVER: "Task"}

# harnessc key -> Claude Code key, for the keys that only change their name.
_RENAMES: dict[str, dict[str, str]] = {
    "grep": {"ignore_case": "-i", "context": "-C", "limit": "head_limit"},
}
# Keys the mapping adds with a fixed value; dropped again on the way back.
_ADDED: dict[str, dict[str, Any]] = {
    "edit": {"replace_all": False},
    "grep": {"output_mode": "content"},
}
_PATH_KEY: dict[str, str] = {"read": "file_path", "write": "file_path", "edit": "file_path"}
_OPTIONAL_PATH = ("ls", "grep", "find")


class ToolMappingError(ValueError):
    """An ``updatedInput`` that cannot become the harnessc tool's arguments."""


def claude_tool_name(name: str) -> str:
    return CLAUDE_TOOL_NAMES.get(name, name)


def claude_tool_names(name: str) -> tuple[str, ...]:
    """Every name a matcher may give tool ``name`` under: harnessc's, Claude Code's
    and Claude Code's older one (``task``, ``Agent``, ``Task``)."""
    names = (name, claude_tool_name(name))
    old = CLAUDE_OLD_NAMES.get(name)
    return (*names, old) if old is not None else names


def _absolute(value: Any, base: Path) -> Any:
    if not isinstance(value, str) or not value:
        return value
    path = Path(os.path.expanduser(value))
    return os.path.normpath(path if path.is_absolute() else base / path)


def claude_tool_input(name: str, arguments: Mapping[str, Any], base: Path) -> dict[str, Any]:
    """The Claude Code ``tool_input`` of a call of harnessc tool ``name``.

    ``base`` is the folder relative paths start from (the tools' workspace).
    """
    args = dict(arguments)
    if name not in CLAUDE_TOOL_NAMES or name == HANDOVER:
        return args
    if name == "bash":
        out: dict[str, Any] = {"command": args.pop("command", "")}
        timeout = args.pop("timeout", None)
        if isinstance(timeout, int | float) and not isinstance(timeout, bool):
            out["timeout"] = int(timeout * 1000)
        elif timeout is not None:
            out["timeout"] = timeout
        return {**out, **args}
    if name in _PATH_KEY:
        out = {_PATH_KEY[name]: _absolute(args.pop("path", ""), base)}
        if name == "edit":
            edits = args.pop("edits", None)
            pairs = [
                {"old_string": e.get("old_text", ""), "new_string": e.get("new_text", "")}
                for e in (edits if isinstance(edits, list) else [])
                if isinstance(e, Mapping)
            ]
            first = pairs[0] if pairs else {"old_string": "", "new_string": ""}
            out.update(first)
            out.update(_ADDED["edit"])
            if len(pairs) > 1:
                out["edits"] = pairs
        return {**out, **args}
    out = {}
    if "pattern" in args:
        out["pattern"] = args.pop("pattern")
    path = args.pop("path", None)
    out["path"] = _absolute(path, base) if path else os.fspath(base)
    for old, new in _RENAMES.get(name, {}).items():
        if old in args:
            out[new] = args.pop(old)
    out.update(_ADDED.get(name, {}))
    return {**out, **args}


def _path_back(value: Any, sent: Any, original: Any) -> Any:
    # the path the hook was shown comes back unchanged: keep the model's own spelling
    if value == sent and original is not None:
        return original
    return value


def harnessc_tool_input(
    name: str, updated: Mapping[str, Any], original: Mapping[str, Any], base: Path
) -> dict[str, Any]:
    """Map a hook's ``updatedInput`` (Claude Code shape) back to harnessc's arguments.

    ``updatedInput`` replaces the whole input, as in Claude Code. Raises
    ToolMappingError for what harnessc's tool cannot do (``replace_all: true``).
    """
    data = dict(updated)
    if name not in CLAUDE_TOOL_NAMES or name == HANDOVER:
        return data
    sent = claude_tool_input(name, original, base)
    if name == "bash":
        out: dict[str, Any] = {}
        if "command" in data:
            out["command"] = data.pop("command")
        timeout = data.pop("timeout", None)
        if isinstance(timeout, int | float) and not isinstance(timeout, bool):
            out["timeout"] = timeout / 1000
        elif timeout is not None:
            out["timeout"] = timeout
        if "description" not in original:
            data.pop("description", None)  # Claude Code's own field: no harnessc meaning
        data.pop("run_in_background", None)
        return {**out, **data}
    for key, value in _ADDED.get(name, {}).items():
        if key in data and data[key] == value:
            data.pop(key)
    if name == "edit" and data.pop("replace_all", False):
        raise ToolMappingError("updatedInput sets replace_all, which harnessc's edit cannot do")
    out = {}
    if name in _PATH_KEY:
        key = _PATH_KEY[name]
        if key in data:
            out["path"] = _path_back(data.pop(key), sent.get(key), original.get("path"))
        if name == "edit":
            many = data.pop("edits", None)
            old, new = data.pop("old_string", None), data.pop("new_string", None)
            if isinstance(many, list):
                pairs = [e for e in many if isinstance(e, Mapping)]
            elif old is not None or new is not None:
                pairs = [{"old_string": old or "", "new_string": new or ""}]
            else:
                pairs = []
            out["edits"] = [
                {"old_text": e.get("old_string", ""), "new_text": e.get("new_string", "")}
                for e in pairs
            ]
        return {**out, **data}
    if "pattern" in data:
        out["pattern"] = data.pop("pattern")
    if "path" in data:
        path = _path_back(data.pop("path"), sent.get("path"), original.get("path"))
        if path != sent.get("path") or "path" in original:
            out["path"] = path
    for old, new in _RENAMES.get(name, {}).items():
        if new in data:
            out[old] = data.pop(new)
    return {**out, **data}
