"""Permission rules for tool calls, as Claude Code writes them: ``Tool(specifier)``.

    permissions:
      allow: ["Bash(git status)", "Bash(pytest *)", "Read(**)"]
      ask: ["Bash(git push *)", "Write(**)", "Edit(**)"]
      deny: ["Bash(rm -rf *)", "Read(./.env)"]
      default: ask          # allow | ask | deny for calls no rule names

Tool names are harnessc's (``bash``) or Claude Code's (``Bash``). Specifiers:

- ``Bash(CMD)``: the command exactly; ``*`` matches any text (``pytest *``) and a final
  ``:*`` any arguments (``npm run test:*``). The command line is read as bash reads it
  (``shell_rules.py``): a deny or ask rule applies when it names any command anywhere in
  the line (after ``;``, ``&``, ``|``, ``&&``, in ``$(...)``, subshells, bodies, behind
  wrappers such as ``env``, ``nice``, ``xargs``, ``bash -c``, ``eval``, ``find -exec``;
  ``find -delete`` counts as ``rm -rf``) or the whole line; an allow holds only when
  allow rules name every command in it and each file its output redirections write may
  be written (as the write tool in the working folder; outside it only with a ``Write``
  or ``Edit`` allow rule). A line that cannot be read (``$X args``, a parse error, a
  shell reading its input) asks, also in bypass mode when a Bash deny rule exists.
- ``Read(PATH)``, ``Edit(PATH)``, ``Write(PATH)``: a gitignore pattern (``**`` any
  folders, ``*`` within a name; see ``path_rules.py``); ``./x`` and ``x/y`` are relative
  to the working folder, ``/x`` and ``//x`` absolute, ``~/x`` in the home folder, a bare
  name (``.env``) matches at any depth. ``Read`` also covers ``ls``, ``grep`` and
  ``find``; ``Edit`` covers ``write`` too.
- any other tool: ``NAME`` or ``NAME(*)`` matches every call, ``NAME(GLOB)`` a call with
  a string argument matching GLOB.

Rules are checked as Claude Code checks them: deny, then ask, then allow, whatever
their specifiers: ``ask: [Bash]`` with ``allow: [Bash(mkdir:*)]`` asks before ``mkdir
-p build``. An "always" answer allows that exact call for the session (after the deny
rules, before the ask rules); ``default`` decides calls no rule names. The permission
mode adjusts the outcome: ``default``; ``accept-edits`` (edits and writes need no
asking); ``plan`` / ``read-only`` (only the read-only tools run); ``bypass`` (nothing is
asked). Deny rules hold in every mode.

Pure: no I/O besides reading the working folder and the home folder's path.
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

from msgspec import Struct

from harnessc.runtime.core import catalog
from harnessc.runtime.permissions.path_rules import call_path, path_matches
from harnessc.runtime.permissions.shell_rules import (
    Analysis,
    Command,
    analyse,
    command_matches,
    text_matches,
)

__all__ = [
    "CLAUDE_ONLY_TOOLS",
    "MODES",
    "READ_ONLY_TOOLS",
    "Decision",
    "PermissionError_",
    "PermissionRules",
    "Rule",
    "check_rule_tools",
    "claude_only_warning",
    "decide",
    "exact_arguments",
    "known_rule_tools",
    "normalize_mode",
    "parse_rule",
    "remembered_rule",
    "rule_tool",
    "specificity",
]

Outcome = Literal["allow", "ask", "deny"]
MODES = ("default", "accept-edits", "plan", "read-only", "bypass")
_MODE_ALIASES = {
    "acceptEdits": "accept-edits",
    "accept_edits": "accept-edits",
    "bypassPermissions": "bypass",
    "read_only": "read-only",
    "readonly": "read-only",
}
READ_ONLY_TOOLS = frozenset({"read", "ls", "grep", "find", "todo"})
EDIT_TOOLS = frozenset({"edit", "write"})
# The hand-over to a sub-agent: it runs in plan mode too, because a sub-agent runs in
# its parent's plan mode.
HANDOVER_TOOL = "task"

# Claude Code's tool names -> harnessc's.
_CLAUDE_NAMES = {
    "Bash": "bash",
    "Read": "read",
    "Write": "write",
    "Edit": "edit",
    "MultiEdit": "edit",
    "LS": "ls",
    "Grep": "grep",
    "Glob": "find",
    "TodoWrite": "todo",
    "Agent": "task",  # the sub-agent hand-over; Task is its older name
    "Task": "task",
}
# A rule on the left covers calls of the tools on the right (as in Claude Code).
_COVERS = {
    "read": {"read", "ls", "grep", "find"},
    "edit": {"edit", "write"},
}
_PATH_TOOLS = {"read", "write", "edit", "ls", "grep", "find"}
_RULE = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_.-]*\*?)\s*(?:\((.*)\))?\s*$", re.S)
# Claude Code's tools harnessc has no counterpart of: a rule naming one matches nothing
# (a warning, so settings copied from Claude Code still load).
CLAUDE_ONLY_TOOLS = frozenset(
    {"WebFetch", "WebSearch", "NotebookEdit", "NotebookRead", "BashOutput"}
    | {"KillShell", "KillBash", "ExitPlanMode", "SlashCommand", "Skill", "TodoRead", "LSP"}
    | {"ListMcpResourcesTool", "ReadMcpResourceTool"}
)


class PermissionError_(ValueError):  # noqa: N801 - PermissionError is a builtin
    """A rule that cannot be parsed, or an unknown mode."""


class Rule(Struct, frozen=True):
    """One ``Tool(specifier)`` rule; ``specifier`` None matches every call of the tool."""

    text: str
    tool: str  # harnessc's name
    specifier: str | None
    literal: bool = False  # the specifier is the exact command or path, no pattern

    def matches(self, tool: str, args: Mapping[str, Any], cwd: str) -> bool:
        if tool not in _COVERS.get(self.tool, {self.tool}) and not _on_server(self.tool, tool):
            return False
        spec = self.specifier
        if spec is None or (spec in ("*", "**") and not self.literal):
            return True
        if self.literal and tool != "bash":  # an "always" answer: exactly these arguments
            return exact_arguments(args) == spec
        if tool == "bash":
            command = str(args.get("command") or "")
            return _bash_names(spec, command, literal=self.literal, cwd=cwd)
        if tool == "task":  # Agent(reviewer): the sub-agent handed to
            return fnmatch.fnmatchcase(str(args.get("subagent_type") or ""), spec)
        if tool in _PATH_TOOLS and self.tool in _PATH_TOOLS:
            return path_matches(spec, call_path(args), cwd)
        return any(
            isinstance(value, str) and fnmatch.fnmatchcase(value, spec) for value in args.values()
        )


def parse_rule(text: str) -> Rule:
    """``"Bash(git status)"`` -> Rule; PermissionError_ naming the problem."""
    match = _RULE.match(text) if isinstance(text, str) else None
    if match is None:
        raise PermissionError_(
            f"bad permission rule {text!r}: write Tool or Tool(specifier), e.g. Bash(git status)"
        )
    name, spec = match.group(1), match.group(2)
    tool = _CLAUDE_NAMES.get(name, name)
    if spec is not None:
        spec = spec.strip()
        if not spec:
            raise PermissionError_(f"bad permission rule {text!r}: empty ()")
    return Rule(text.strip(), tool, spec)


def rule_tool(text: str) -> str | None:
    """The tool name as a rule writes it (``Bash`` in ``Bash(ls)``); None if it does not parse."""
    match = _RULE.match(text) if isinstance(text, str) else None
    return match.group(1) if match is not None else None


def known_rule_tools(tools: Iterable[str] = ()) -> set[str]:
    """The tool names a rule may use: harnessc's built-in tools, Claude Code's names of
    them, and ``tools`` (the agent's own)."""
    return {entry.name for entry in catalog.TOOLS} | set(_CLAUDE_NAMES) | set(tools)


def check_rule_tools(
    rules: PermissionRules, tools: Iterable[str], mcp_prefixes: Iterable[str] = ()
) -> list[str]:
    """Refuse rules that name no tool (PermissionError_ naming the rule, with a did-you-mean);
    return a warning for each rule naming a Claude Code tool harnessc lacks. Rules naming
    MCP tools (``mcp__...``, or a server's own prefix) pass: those tools are known once the
    servers start."""
    known = known_rule_tools(tools)
    prefixes = ("mcp__", *mcp_prefixes)
    warnings: list[str] = []
    for rule in [*rules.deny, *rules.ask, *rules.allow]:
        name = rule_tool(rule.text) or rule.tool
        if name in known or name.startswith(prefixes):
            continue
        if name in CLAUDE_ONLY_TOOLS:
            warnings.append(claude_only_warning(rule.text, name))
            continue
        import difflib  # only for the message

        close = difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.6)
        lowered = {k.lower(): k for k in sorted(known)}
        hint = close[0] if close else lowered.get(name.lower())
        raise PermissionError_(
            f"permission rule {rule.text!r} names no known tool or MCP server {name!r}"
            + (f"; did you mean {hint!r}?" if hint else "")
        )
    return warnings


def claude_only_warning(text: str, name: str) -> str:
    return (
        f"permission rule {text!r} names Claude Code's {name}, which harnessc has not: "
        "it matches nothing"
    )


def _on_server(rule_tool: str, tool: str) -> bool:
    """Claude Code's server-wide rules: ``mcp__h`` and ``mcp__h__*`` name every tool of ``h``."""
    if not rule_tool.startswith("mcp__"):
        return False
    if rule_tool.endswith("__*"):
        return tool.startswith(rule_tool[:-1])
    return "__" not in rule_tool[5:] and tool.startswith(rule_tool + "__")


def normalize_mode(mode: str) -> str:
    value = _MODE_ALIASES.get(mode, mode)
    if value not in MODES:
        raise PermissionError_(f"unknown permission mode {mode!r}; modes: {', '.join(MODES)}")
    return "plan" if value == "read-only" else value


class Decision(Struct, frozen=True):
    outcome: Outcome
    reason: str  # the rule or the mode that decided


class PermissionRules(Struct):
    """The rules of an agent plus the ones remembered in this session ("always")."""

    allow: list[Rule] = []
    ask: list[Rule] = []
    deny: list[Rule] = []
    default: Outcome = "allow"

    @classmethod
    def from_config(cls, config: Mapping[str, Any] | None) -> PermissionRules:
        config = config or {}
        default = config.get("default", "allow")
        if default not in ("allow", "ask", "deny"):
            raise PermissionError_(
                f"permissions.default must be allow, ask or deny, not {default!r}"
            )

        def rules(key: str) -> list[Rule]:
            value = config.get(key) or []
            if isinstance(value, str) or not isinstance(value, Iterable):
                raise PermissionError_(f"permissions.{key} must be a list of rules")
            return [parse_rule(str(item)) for item in value]

        return cls(rules("allow"), rules("ask"), rules("deny"), default)


def decide(
    rules: PermissionRules,
    tool: str,
    args: Mapping[str, Any],
    *,
    mode: str = "default",
    cwd: str | None = None,
    remembered: Sequence[Rule] = (),
) -> Decision:
    """What happens to a call of ``tool`` with ``args`` (``tool`` in harnessc's names)."""
    mode = normalize_mode(mode)
    where = cwd or os.getcwd()
    for rule in rules.deny:
        if rule.matches(tool, args, where):
            return Decision("deny", f"denied by the rule {rule.text}")
    if mode == "plan" and tool not in READ_ONLY_TOOLS and tool != HANDOVER_TOOL:
        return Decision("deny", f"{tool} does not run in plan (read-only) mode")
    if tool == "bash":
        return _decide_bash(rules, str(args.get("command") or ""), mode, where, remembered)
    if mode == "bypass":
        return Decision("allow", "bypass mode")
    if _any_match(remembered, tool, args, where):
        return Decision("allow", "allowed for this session")
    ask = _first_match(rules.ask, tool, args, where)
    if ask is not None:
        return _edits(mode, tool, Decision("ask", f"the rule {ask.text}"))
    allow = _first_match(rules.allow, tool, args, where)
    if allow is not None:
        return Decision("allow", f"allowed by {allow.text}")
    return _edits(mode, tool, Decision(rules.default, f"default: {rules.default}"))


def specificity(rule: Rule) -> int:
    """How narrowly a rule names calls: exact > with wildcards > the whole tool."""
    spec = rule.specifier
    if spec is None or spec in ("*", "**"):
        return 0
    literal = len(spec.replace("*", ""))
    return literal + (1 if "*" in spec else 10_000)


def _first_match(
    rules: Sequence[Rule], tool: str, args: Mapping[str, Any], cwd: str
) -> Rule | None:
    return next((rule for rule in rules if rule.matches(tool, args, cwd)), None)


def _edits(mode: str, tool: str, decision: Decision) -> Decision:
    if mode == "accept-edits" and tool in EDIT_TOOLS and decision.outcome == "ask":
        return Decision("allow", "accept-edits mode")
    return decision


def _any_match(rules: Sequence[Rule], tool: str, args: Mapping[str, Any], cwd: str) -> bool:
    return any(rule.matches(tool, args, cwd) for rule in rules)


def remembered_rule(tool: str, args: Mapping[str, Any]) -> Rule:
    """The narrowest rule "always" remembers for this call: the exact command, the exact
    path, or (any other tool: python, MCP, a hand-over) exactly these arguments."""
    if tool == "bash":
        command = str(args.get("command", "")).strip()
        return Rule(f"Bash({command})", "bash", command or None, literal=True)
    if tool in _PATH_TOOLS:
        path = call_path(args)
        return Rule(f"{tool}({path})", tool, os.path.abspath(path))
    exact = exact_arguments(args)
    return Rule(f"{tool}({exact})", tool, exact, literal=True)


def exact_arguments(args: Mapping[str, Any]) -> str:
    """A call's arguments as one canonical JSON text (keys sorted): what an exact rule
    of a tool other than bash and the file tools names."""
    return json.dumps(dict(args), sort_keys=True, ensure_ascii=False, default=str)


# -- commands ------------------------------------------------------------------------


def _bash_names(spec: str, command: str, *, literal: bool, cwd: str | None = None) -> bool:
    """Whether a Bash rule names ``command``: the whole line, or any command in it (also
    under another name: a link or a copy of the program the rule names)."""
    if literal:
        return command.strip() == spec
    if text_matches(spec, command):
        return True
    for one in analyse(command).commands:
        if command_matches(spec, one, strict=False):
            return True
        if cwd is not None and one.words:
            for alias in program_aliases(one.words[0], cwd, spec):
                if command_matches(spec, Command((alias, *one.words[1:])), strict=False):
                    return True
    return False


def program_aliases(name: str, cwd: str, spec: str) -> list[str]:
    """Other names of the program ``name`` runs (a path, or found on the PATH): the name
    of the file a link points to, and the program a rule's ``spec`` names when it is the
    same file or a copy of it (``cp /bin/rm del``)."""
    import shutil

    target = os.path.join(cwd, name) if "/" in name else shutil.which(name)
    if not target or not os.path.isfile(target):
        return []
    names = {os.path.basename(os.path.realpath(target))}
    words = spec.split()
    program = words[0] if words else ""
    if program and "*" not in program and ":" not in program:
        named = shutil.which(program)
        if named and _same_program(target, named):
            names.add(os.path.basename(program))
    names.discard(os.path.basename(name))
    return sorted(names)


_HASHES: dict[tuple[int, int, int, int], str] = {}


def _same_program(first: str, second: str) -> bool:
    try:
        if os.path.samefile(first, second):
            return True
        a, b = os.stat(first), os.stat(second)
    except OSError:
        return False
    if a.st_size != b.st_size:
        return False
    return _digest(first, a) == _digest(second, b)


def _digest(path: str, info: os.stat_result) -> str:
    import hashlib

    key = (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns)
    found = _HASHES.get(key)
    if found is None:
        digest = hashlib.sha256()
        try:
            with open(path, "rb") as handle:
                while chunk := handle.read(1 << 20):
                    digest.update(chunk)
        except OSError:
            return path  # unreadable: equal to nothing else
        found = _HASHES[key] = digest.hexdigest()
        if len(_HASHES) > 256:
            _HASHES.pop(next(iter(_HASHES)))
    return found


def _missing_program(found: Any, cwd: str) -> str | None:
    """A command given by a path that does not exist yet (the line makes it: a copy of
    a program no rule can recognise until it exists)."""
    for one in found.commands:
        name = one.words[0] if one.words else ""
        if "/" in name and not os.path.exists(os.path.join(cwd, os.path.expanduser(name))):
            return f"the program {name} does not exist yet"
    return None


def _decide_bash(
    rules: PermissionRules, command: str, mode: str, cwd: str, remembered: Sequence[Rule]
) -> Decision:
    """A command line no deny rule names (see the module's docstring)."""
    found = analyse(command)
    writes = [_write_decision(rules, path, mode, cwd) for path in found.writes]
    denied = next((d for d in writes if d.outcome == "deny"), None)
    if denied is not None:
        return denied
    problem = found.unreadable
    if problem is None and any(rule.tool == "bash" for rule in rules.deny):
        problem = _missing_program(found, cwd)  # a deny rule cannot know what it is
    if problem is not None and found.unreadable is None:
        found = Analysis(found.commands, found.writes, problem)
    unreadable = Decision("ask", f"cannot tell what the command runs: {found.unreadable}")
    if mode == "bypass":
        if found.unreadable and any(rule.tool == "bash" for rule in rules.deny):
            return unreadable  # a deny rule cannot be checked
        return Decision("allow", "bypass mode")
    if _any_match(remembered, "bash", {"command": command}, cwd):
        return Decision("allow", "allowed for this session")
    if found.unreadable:
        return unreadable
    ask = _first_match(rules.ask, "bash", {"command": command}, cwd)
    if ask is not None:
        return Decision("ask", f"the rule {ask.text}")
    outcomes = list(writes)
    for one in found.commands:
        if one.wrapper:
            continue  # the command it runs is listed after it
        allow = next((r for r in rules.allow if _allows(r, one)), None)
        if allow is not None and not one.risky_env:
            outcomes.append(Decision("allow", f"allowed by {allow.text}"))
        else:
            outcomes.append(Decision(rules.default, f"default: {rules.default} (for {one.text})"))
    if not outcomes:
        return Decision(rules.default, f"default: {rules.default}")
    worst = max(outcomes, key=lambda d: _STRICTNESS[d.outcome])
    if worst.outcome != "allow":
        return worst
    reasons = dict.fromkeys(d.reason for d in outcomes)
    return Decision("allow", "; ".join(reasons))


_STRICTNESS = {"allow": 0, "ask": 1, "deny": 2}


def _allows(rule: Rule, command: Command) -> bool:
    if rule.tool != "bash":
        return False
    if rule.specifier is None or rule.specifier in ("*", "**"):
        return True
    return command_matches(rule.specifier, command, strict=True)


def _write_decision(rules: PermissionRules, path: str, mode: str, cwd: str) -> Decision:
    """A file an output redirection writes: as the write tool would be decided inside
    the working folder; outside it, only a Write or Edit allow rule lets it run unasked."""
    target = os.path.normpath(os.path.join(cwd, os.path.expanduser(path)))
    root = os.path.normpath(cwd)
    args = {"path": target}
    for rule in rules.deny:
        if rule.matches("write", args, cwd):
            return Decision("deny", f"denied by the rule {rule.text} (for writing {path})")
    if target == root or target.startswith(root.rstrip("/") + "/"):
        inside = decide(rules, "write", args, mode=mode, cwd=cwd)
        return Decision(inside.outcome, f"{inside.reason} (for writing {path})")
    allow = _first_match(rules.allow, "write", args, cwd)
    if allow is not None:
        return Decision("allow", f"allowed by {allow.text} (for writing {path})")
    return Decision("ask", f"writes {path}, outside the working folder")
