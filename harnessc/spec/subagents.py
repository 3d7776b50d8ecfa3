"""The ``agents:`` section: which sub-agents a spec declares, and Claude Code subagent files.

A sub-agent is another harnessc spec (``spec:``, loaded and checked by ``load``) or a
Claude Code subagent file (``from:`` a ``.md`` file, or ``agents.from:`` a folder of
them). A Claude Code file is read as Claude Code reads it: YAML frontmatter between
``---`` lines (``name``, ``description``, ``tools``, ``model``, ``permissionMode``,
``mcpServers``) and the body as the system prompt. Problems are diagnostics with the
file, line and column they point at.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from harnessc.runtime.core import catalog
from harnessc.runtime.permissions.rules import CLAUDE_ONLY_TOOLS
from harnessc.spec.diagnostics import Diagnostic, did_you_mean
from harnessc.spec.yamlsource import YamlSource

__all__ = [
    "CLAUDE_TO_HARNESSC",
    "ClaudeAgentFile",
    "DEFAULT_MAX_DEPTH",
    "SubAgentEntry",
    "agent_entries",
    "read_claude_agent",
]

DEFAULT_MAX_DEPTH = 1
MAX_FILE_BYTES = 1 << 20

# Claude Code's tool names -> harnessc's built-in tools.
CLAUDE_TO_HARNESSC: dict[str, str] = {
    entry.claude_code_name: entry.name for entry in catalog.TOOLS if entry.claude_code_name
}
CLAUDE_TO_HARNESSC["MultiEdit"] = "edit"
CLAUDE_TO_HARNESSC["TodoWrite"] = "todo"
# The hand-over tool itself: a Claude Code file naming it may delegate (within max_depth).
HANDOVER_NAMES = frozenset({"Task", "Agent", "task"})
# permissionMode values a sub-agent may take (bypassPermissions is left out: a sub-agent
# never gets more leeway than its parent's rules give)
_MODES = frozenset({"default", "acceptEdits", "plan"})


@dataclass(slots=True)
class ClaudeAgentFile:
    """A Claude Code subagent file as harnessc runs it."""

    path: Path
    name: str
    description: str
    system_prompt: str
    tools: list[str] | None = None  # harnessc tool names; None: every tool of the parent
    model: str | None = None  # a key of the parent's models; None: the parent's model
    permission_mode: str | None = None
    mcp_servers: list[str] | None = None


@dataclass(slots=True)
class SubAgentEntry:
    """One sub-agent the spec declares (before the files it names are read)."""

    name: str
    kind: str  # "spec" | "claude"
    path: Path  # absolute
    description: str | None
    at: tuple[str | int, ...]  # where it is declared in the spec
    shown: str = ""  # the path as written


@dataclass(slots=True)
class _Reader:
    source: YamlSource
    spec_dir: Path
    out: list[Diagnostic] = field(default_factory=list)

    def report(self, at: tuple[str | int, ...], severity: str, message: str) -> None:
        mark = self.source.mark(at)
        self.out.append(
            Diagnostic(self.source.path, mark.line, mark.col, severity, message)  # type: ignore[arg-type]
        )


def agent_entries(
    source: YamlSource, spec_dir: Path
) -> tuple[list[SubAgentEntry], list[Diagnostic]]:
    """The sub-agents of a spec's ``agents:`` section, with a diagnostic for each file
    or folder that is not there."""
    reader = _Reader(source, spec_dir)
    data = source.data if isinstance(source.data, dict) else {}
    section = data.get("agents")
    if not isinstance(section, dict):
        return [], reader.out
    entries: list[SubAgentEntry] = []
    for name, value in section.items():
        if name == "from" or not isinstance(value, dict):
            continue
        for key, kind in (("spec", "spec"), ("from", "claude")):
            rel = value.get(key)
            if not isinstance(rel, str) or not rel.strip():
                continue
            where: tuple[str | int, ...] = ("agents", name, key)
            path = (spec_dir / os.path.expanduser(rel)).resolve()
            if not path.is_file():
                reader.report(where, "error", f"sub-agent {name!r}: no file {rel!r}")
                continue
            description = value.get("description")
            entries.append(
                SubAgentEntry(
                    name,
                    kind,
                    path,
                    description if isinstance(description, str) else None,
                    where,
                    rel,
                )
            )
    folder = section.get("from")
    if isinstance(folder, str) and folder.strip():
        at: tuple[str | int, ...] = ("agents", "from")
        root = (spec_dir / os.path.expanduser(folder)).resolve()
        if not root.is_dir():
            reader.report(at, "error", f"agents.from: no folder {folder!r}")
        else:
            declared = {e.name for e in entries}
            for file in sorted(root.glob("*.md")):
                name = _frontmatter_name(file) or file.stem
                if name in declared:
                    reader.report(
                        at, "error", f"agents.from: {file.name} declares {name!r} a second time"
                    )
                    continue
                declared.add(name)
                entries.append(
                    SubAgentEntry(name, "claude", file, None, at, f"{folder}/{file.name}")
                )
    return entries, reader.out


def _split(text: str) -> tuple[str | None, str, int]:
    """(frontmatter, body, line of the first frontmatter line)."""
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].strip() != "---":
        return None, text, 0
    for index in range(1, len(lines)):
        if lines[index].strip() == "---":
            return "".join(lines[1:index]), "".join(lines[index + 1 :]), 2
    return None, text, 0


_KEY_LINE = re.compile(r"^([A-Za-z][A-Za-z0-9_-]*)\s*:\s?(.*)$")


def _frontmatter(text: str) -> dict[str, Any]:
    """The frontmatter as Claude Code reads it: YAML, else one ``key: value`` a line
    (descriptions with ``: `` and ``<example>`` blocks are common and not YAML)."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError:
        data = None
    if isinstance(data, dict):
        return {str(k): v for k, v in data.items()}
    out: dict[str, Any] = {}
    for line in text.splitlines():
        match = _KEY_LINE.match(line)
        if match:
            out[match.group(1)] = match.group(2).strip()
    return out


def _frontmatter_name(file: Path) -> str | None:
    try:
        text = file.read_text(encoding="utf-8", errors="replace")[:MAX_FILE_BYTES]
    except OSError:
        return None
    head, _, _ = _split(text)
    name = _frontmatter(head).get("name") if head is not None else None
    return name.strip() if isinstance(name, str) and name.strip() else None


def _key_line(head: str, key: str, first: int) -> tuple[int, int]:
    for index, line in enumerate(head.splitlines()):
        if line.startswith(f"{key}:"):
            value = line[len(key) + 1 :]
            return first + index, len(key) + 2 + (len(value) - len(value.lstrip()))
    return max(first - 1, 1), 1


def _names(value: Any) -> list[str] | None:
    if value is None:
        return None
    if isinstance(value, str):
        return [n.strip() for n in value.split(",") if n.strip()]
    if isinstance(value, list):
        return [str(n).strip() for n in value if str(n).strip()]
    return None


def read_claude_agent(
    path: Path,
    shown: str,
    *,
    parent_tools: Iterable[str],
    parent_models: Iterable[str],
) -> tuple[ClaudeAgentFile | None, list[Diagnostic]]:
    """Read a Claude Code subagent file; None (with errors) when it cannot run."""
    out: list[Diagnostic] = []
    try:
        raw = path.read_bytes()[: MAX_FILE_BYTES + 1]
        text = raw.decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        out.append(Diagnostic(shown, 1, 1, "error", f"cannot read the subagent file: {exc}"))
        return None, out
    if len(raw) > MAX_FILE_BYTES:
        out.append(Diagnostic(shown, 1, 1, "error", "the subagent file is over 1 MiB"))
        return None, out
    head, body, first = _split(text)
    if head is None:
        out.append(
            Diagnostic(
                shown, 1, 1, "error", "a Claude Code subagent file starts with a --- frontmatter"
            )
        )
        return None, out
    data = _frontmatter(head)

    def report(key: str, severity: str, message: str) -> None:
        line, col = _key_line(head, key, first)
        out.append(Diagnostic(shown, line, col, severity, message))  # type: ignore[arg-type]

    name = data.get("name")
    if not isinstance(name, str) or not name.strip():
        name = path.stem
    description = data.get("description")
    if not isinstance(description, str) or not description.strip():
        report("description", "error", "the subagent file needs a description")
        description = ""
    have = set(parent_tools)
    tools: list[str] | None = None
    listed = _names(data.get("tools"))
    if "tools" in data and listed is None:
        report("tools", "error", "tools must be a comma-separated list of tool names")
    if listed is not None:
        tools = []
        known = {e.name for e in catalog.TOOLS}
        for tool in listed:
            mapped = CLAUDE_TO_HARNESSC.get(tool, tool if tool in known or tool in have else None)
            if tool.startswith("mcp__"):
                mapped = tool
            if tool in HANDOVER_NAMES:
                mapped = "task"
            if mapped is None:
                if tool in CLAUDE_ONLY_TOOLS:
                    report(
                        "tools", "warning", f"Claude Code's {tool} has no harnessc tool: left out"
                    )
                    continue
                choices = sorted(set(CLAUDE_TO_HARNESSC) | known | have)
                report(
                    "tools",
                    "error",
                    f"tool {tool!r} is neither Claude Code's nor harnessc's"
                    + did_you_mean(tool, choices),
                )
                continue
            if mapped != "task" and not mapped.startswith("mcp__") and mapped not in have:
                report(
                    "tools", "warning", f"{tool}: the parent agent has no {mapped} tool: left out"
                )
                continue
            if mapped not in tools:
                tools.append(mapped)
    model = data.get("model")
    chosen: str | None = None
    if isinstance(model, str) and model.strip() and model.strip() != "inherit":
        models = list(parent_models)
        if model.strip() in models:
            chosen = model.strip()
        else:
            report(
                "model",
                "warning",
                f"model {model.strip()!r} is not one of the parent's models "
                f"({', '.join(models)}): the sub-agent uses the parent's model",
            )
    mode = data.get("permissionMode")
    if mode == "bypassPermissions":
        report(
            "permissionMode",
            "warning",
            "permissionMode bypassPermissions is left out: a sub-agent keeps its parent's rules",
        )
        mode = None
    if mode is not None and mode not in _MODES:
        report("permissionMode", "error", f"unknown permissionMode {mode!r}")
        mode = None
    servers = _names(data.get("mcpServers"))
    prompt = body.strip("\n")
    if not prompt.strip():
        out.append(Diagnostic(shown, first, 1, "warning", "the subagent file has no system prompt"))
    if any(d.severity == "error" for d in out):
        return None, out
    return (
        ClaudeAgentFile(
            path=path,
            name=name.strip(),
            description=description.strip(),
            system_prompt=prompt + "\n",
            tools=tools,
            model=chosen,
            permission_mode=mode if isinstance(mode, str) else None,
            mcp_servers=servers,
        ),
        out,
    )
