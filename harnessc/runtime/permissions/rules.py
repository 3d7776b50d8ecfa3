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

import difflib
import fnmatch
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

from harnessc.runtime.core import catalog
from harnessc.runtime.permissions.path_rules import call_path, path_matches
from harnessc.runtime.permissions.shell_rules import Command, analyse, command_matches, text_matches
from harnessc.runtime.support.records import NEW_LIST, Record

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


class Rule(Record, frozen=True):
    """One ``Tool(specifier)`` rule; ``specifier`` None matches every call of the tool."""

    __slots__ = ("text", "tool", "specifier", "literal")
    text: str
    tool: str  # harnessc's name
    specifier: str | None
    literal: bool  # the specifier is the exact command or path, no pattern

    def __init__(self, text: str, tool: str, specifier: str | None, literal: bool = False) -> None:
        object.__setattr__(self, "text", text)
        object.__setattr__(self, "tool", tool)
        object.__setattr__(self, "specifier", specifier)
        object.__setattr__(self, "literal", literal)

    def matches(self, tool: str, args: Mapping[str, Any], cwd: str) -> bool:
        if tool not in _COVERS.get(self.tool, {self.tool}) and not _on_server(self.tool, tool):
            return False
        spec = self.specifier
        if spec is None or spec in ("*", "**"):
            return True
        if tool == "bash":
            return _bash_names(spec, str(args.get("command") or ""), literal=self.literal)
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


class Decision(Record, frozen=True):
    __slots__ = ("outcome", "reason")
    outcome: Outcome
    reason: str  # the rule or the mode that decided

    def __init__(self, outcome: Outcome, reason: str) -> None:
        object.__setattr__(self, "outcome", outcome)
        object.__setattr__(self, "reason", reason)


class PermissionRules(Record):
    """The rules of an agent plus the ones remembered in this session ("always")."""

    __slots__ = ("allow", "ask", "deny", "default")
    allow: list[Rule]
    ask: list[Rule]
    deny: list[Rule]
    default: Outcome

    def __init__(
        self,
        allow: list[Rule] = NEW_LIST,
        ask: list[Rule] = NEW_LIST,
        deny: list[Rule] = NEW_LIST,
        default: Outcome = "allow",
    ) -> None:
        self.allow = [] if allow is NEW_LIST else allow
        self.ask = [] if ask is NEW_LIST else ask
        self.deny = [] if deny is NEW_LIST else deny
        self.default = default

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
    """The rule "always" remembers for this call: the exact command, the exact path, or
    the tool (for a tool without either)."""
    if tool == "bash":
        command = str(args.get("command", "")).strip()
        return Rule(f"Bash({command})", "bash", command or None, literal=True)
    if tool in _PATH_TOOLS:
        path = call_path(args)
        return Rule(f"{tool}({path})", tool, os.path.abspath(path))
    return Rule(tool, tool, None)


# -- commands ------------------------------------------------------------------------


def _bash_names(spec: str, command: str, *, literal: bool) -> bool:
    """Whether a Bash rule names ``command``: the whole line, or any command in it."""
    if literal:
        return command.strip() == spec
    if text_matches(spec, command):
        return True
    return any(command_matches(spec, one, strict=False) for one in analyse(command).commands)


def _decide_bash(
    rules: PermissionRules, command: str, mode: str, cwd: str, remembered: Sequence[Rule]
) -> Decision:
    """A command line no deny rule names (see the module's docstring)."""
    found = analyse(command)
    writes = [_write_decision(rules, path, mode, cwd) for path in found.writes]
    denied = next((d for d in writes if d.outcome == "deny"), None)
    if denied is not None:
        return denied
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
