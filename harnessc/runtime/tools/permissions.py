"""Permission rules for tool calls, as Claude Code writes them: ``Tool(specifier)``.

    permissions:
      allow: ["Bash(git status)", "Bash(pytest *)", "Read(**)"]
      ask: ["Bash(*)", "Write(**)", "Edit(**)"]
      deny: ["Bash(rm -rf *)", "Read(./.env)"]
      default: ask          # allow | ask | deny for calls no rule names

Tool names are harnessc's (``bash``) or Claude Code's (``Bash``). Specifiers:

- ``Bash(CMD)``: the command exactly; ``*`` matches any text (``pytest *``) and a final
  ``:*`` any arguments (``npm run test:*``). A command chained with ``&&``, ``||``,
  ``;`` or ``|`` is allowed only when every part is; a deny or ask rule matching any
  part applies to the whole.
- ``Read(PATH)``, ``Edit(PATH)``, ``Write(PATH)``: a gitignore pattern (``**`` any
  folders, ``*`` within a name; see ``path_rules.py``); ``./x`` and ``x/y`` are relative
  to the working folder, ``/x`` and ``//x`` absolute, ``~/x`` in the home folder, a bare
  name (``.env``) matches at any depth. ``Read`` also covers ``ls``, ``grep`` and
  ``find``; ``Edit`` covers ``write`` too.
- any other tool: ``NAME`` or ``NAME(*)`` matches every call, ``NAME(GLOB)`` a call with
  a string argument matching GLOB.

Deny rules always win. Between an allow and an ask rule that both match, the more
specific one decides (an exact specifier over one with ``*``, which is over the bare
tool; a tie asks), so ``allow: [Bash(git status)]`` with ``ask: [Bash(*)]`` runs
``git status`` and asks for the rest; ``default`` decides calls no rule names. The
permission mode adjusts the outcome: ``default``; ``accept-edits`` (edits and writes
need no asking); ``plan`` / ``read-only`` (only the read-only tools run); ``bypass``
(nothing is asked). Deny rules hold in every mode.

Pure: no I/O besides reading the working folder and the home folder's path.
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from harnessc.runtime.tools.path_rules import call_path, path_matches

__all__ = [
    "MODES",
    "READ_ONLY_TOOLS",
    "Decision",
    "PermissionError_",
    "PermissionRules",
    "Rule",
    "decide",
    "normalize_mode",
    "parse_rule",
    "remembered_rule",
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
}
# A rule on the left covers calls of the tools on the right (as in Claude Code).
_COVERS = {
    "read": {"read", "ls", "grep", "find"},
    "edit": {"edit", "write"},
}
_PATH_TOOLS = {"read", "write", "edit", "ls", "grep", "find"}
_RULE = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_.-]*)\s*(?:\((.*)\))?\s*$", re.S)
_CHAIN = re.compile(r"\s*(?:&&|\|\||;|\||\n)\s*")


class PermissionError_(ValueError):  # noqa: N801 - PermissionError is a builtin
    """A rule that cannot be parsed, or an unknown mode."""


@dataclass(slots=True, frozen=True)
class Rule:
    """One ``Tool(specifier)`` rule; ``specifier`` None matches every call of the tool."""

    text: str
    tool: str  # harnessc's name
    specifier: str | None

    def matches(self, tool: str, args: Mapping[str, Any], cwd: str) -> bool:
        if tool not in _COVERS.get(self.tool, {self.tool}):
            return False
        spec = self.specifier
        if spec is None or spec in ("*", "**"):
            return True
        if tool == "bash":
            return any(_command_matches(spec, part) for part in _commands(args))
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


def normalize_mode(mode: str) -> str:
    value = _MODE_ALIASES.get(mode, mode)
    if value not in MODES:
        raise PermissionError_(f"unknown permission mode {mode!r}; modes: {', '.join(MODES)}")
    return "plan" if value == "read-only" else value


@dataclass(slots=True, frozen=True)
class Decision:
    outcome: Outcome
    reason: str  # the rule or the mode that decided


@dataclass(slots=True)
class PermissionRules:
    """The rules of an agent plus the ones remembered in this session ("always")."""

    allow: list[Rule] = field(default_factory=list)
    ask: list[Rule] = field(default_factory=list)
    deny: list[Rule] = field(default_factory=list)
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
    if mode == "plan" and tool not in READ_ONLY_TOOLS:
        return Decision("deny", f"{tool} does not run in plan (read-only) mode")
    if mode == "bypass":
        return Decision("allow", "bypass mode")
    if tool == "bash" and len(_commands(args)) > 1:
        return _decide_chain(rules, args, mode, where, remembered)
    if _any_match(remembered, tool, args, where):
        return Decision("allow", "allowed for this session")
    ask = _most_specific(rules.ask, tool, args, where)
    allow = _most_specific(rules.allow, tool, args, where)
    if ask is not None and (allow is None or specificity(allow) <= specificity(ask)):
        return _edits(mode, tool, Decision("ask", f"the rule {ask.text}"))
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


def _most_specific(
    rules: Sequence[Rule], tool: str, args: Mapping[str, Any], cwd: str
) -> Rule | None:
    found = [rule for rule in rules if rule.matches(tool, args, cwd)]
    return max(found, key=specificity) if found else None


def _decide_chain(
    rules: PermissionRules,
    args: Mapping[str, Any],
    mode: str,
    cwd: str,
    remembered: Sequence[Rule],
) -> Decision:
    """A chained command: the strictest outcome of its parts."""
    order = {"allow": 0, "ask": 1, "deny": 2}
    worst = Decision("allow", "every part is allowed")
    for part in _commands(args):
        one = decide(rules, "bash", {"command": part}, mode=mode, cwd=cwd, remembered=remembered)
        if order[one.outcome] > order[worst.outcome]:
            worst = Decision(one.outcome, f"{one.reason} (for {part!r})")
    return worst


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
        return Rule(f"Bash({command})", "bash", command or None)
    if tool in _PATH_TOOLS:
        path = call_path(args)
        return Rule(f"{tool}({path})", tool, os.path.abspath(path))
    return Rule(tool, tool, None)


# -- commands ------------------------------------------------------------------------


def _commands(args: Mapping[str, Any]) -> list[str]:
    command = str(args.get("command", "") or "").strip()
    parts = [p.strip() for p in _CHAIN.split(command) if p.strip()]
    return parts or [command]


def _command_matches(spec: str, command: str) -> bool:
    if spec.endswith(":*"):
        prefix = spec[:-2].rstrip()
        return command == prefix or command.startswith(prefix + " ")
    if "*" in spec:
        pattern = re.escape(spec).replace(r"\*", ".*")
        # "pytest *" also matches a bare "pytest", as Claude Code's prefix rules do.
        if spec.endswith(" *") and command == spec[:-2]:
            return True
        return re.fullmatch(pattern, command, re.S) is not None
    return " ".join(command.split()) == " ".join(spec.split())


# The gate (a tool_call hook applying the rules) and the session records of answers
# live in permission_gate.py (its __all__); generated modules import permission_hook
# from here.
def __getattr__(name: str) -> Any:
    if not name.startswith("__"):
        from harnessc.runtime.tools import permission_gate

        if name in permission_gate.__all__:
            return getattr(permission_gate, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
