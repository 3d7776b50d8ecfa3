"""The permission gate: a ``tool_call`` hook applying the rules of ``permissions.py``
(allow, block, ask the interactive user, or hold the call for ``--approve`` /
``--deny``), and the session entries that record a user's answers."""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harnessc.runtime.permissions.path_rules import call_path, other_names
from harnessc.runtime.permissions.rules import (
    _COVERS,
    _PATH_TOOLS,
    Decision,
    PermissionRules,
    Rule,
    decide,
    normalize_mode,
    remembered_rule,
)
from harnessc.runtime.tools.paths import PATH_FILTER, PathError, call_targets

if TYPE_CHECKING:
    from harnessc.runtime.options.harness_context import HarnessContext

__all__ = [
    "PERMISSION_ENTRY",
    "PermissionGate",
    "claude_permission_mode",
    "describe_call",
    "find_gate",
    "pending_asks",
    "permission_hook",
    "record_answer",
    "recorded_answer",
    "tool_context_with_rules",
    "with_parent_rules",
]


PERMISSION_ENTRY = "harnessc.permission"  # custom session entries: a user's answer to an ask
Asker = Callable[[str, Mapping[str, Any], "Decision"], Awaitable[str]]


class PermissionGate:
    """A ``tool_call`` hook: allow, block, ask (``asker``: the interactive mode's y / n /
    always question) or, with nobody to ask, pause the run as a pull point. An answer
    given later (``--approve CALL_ID`` / ``--deny CALL_ID``) is a session entry that the
    gate reads when the model calls the same tool with the same arguments again.
    """

    def __init__(self, rules: PermissionRules, mode: str = "default") -> None:
        self.rules = rules
        self.mode = normalize_mode(mode)
        self.remembered: list[Rule] = []  # "always" answers of this process
        self.asker: Asker | None = None
        # the tools of the caller (external tools a client brought, as an AG-UI front
        # end's): an ``ask`` does not hold them, the caller answers them; a deny rule does
        self.client_tools: frozenset[str] = frozenset()

    def set_mode(self, mode: str) -> None:
        self.mode = normalize_mode(mode)

    async def __call__(self, event: Any, harness: HarnessContext) -> Any:
        from harnessc.runtime.core.hooks import PERMISSION_PAUSE, PauseRequest, ToolCallResult

        tool, args = event.tool_name, dict(event.input or {})
        cwd = _workspace(harness)
        context = await _tool_context(harness, cwd) if tool in _PATH_TOOLS else None
        targets = _call_targets(tool, args, context)
        decision = self.decide(tool, args, cwd, targets)
        if decision.outcome == "allow" and not _carries_filter(context) and self._walks(tool):
            decision = Decision(
                "ask",
                f"{tool} looks inside folders and its tool context is not a mapping, so the "
                "path rules cannot be handed to it for the files inside",
            )
        label = _label(tool, args)
        if decision.outcome == "allow":
            return None
        if decision.outcome == "ask":  # an MCP tool is asked about with its server's words
            decision = _with_annotations(decision, harness, tool)
        if decision.outcome == "deny":
            return ToolCallResult(block=True, reason=f"{label}: {decision.reason}")
        if tool in self.client_tools:
            # the caller's own tool (an AG-UI front end's): its answer is the caller's
            # decision, so the caller is not asked first
            return None
        answered = recorded_answer(
            getattr(harness, "session", None), tool, args, cwd, event.tool_call_id
        )
        if answered == "allow":
            return None
        if answered == "deny":
            return ToolCallResult(block=True, reason=f"{label}: denied by the user")
        if self.asker is None:
            session = getattr(harness, "session", None)
            if session is not None:  # what --approve / --deny CALL_ID answer
                record_answer(session, tool, args, "pending", event.tool_call_id)
            return PauseRequest(
                reason=f"{PERMISSION_PAUSE}{label} ({decision.reason}); call {event.tool_call_id}"
            )
        answer = (await self.asker(tool, args, decision)).strip().lower()
        if answer in ("a", "always"):
            # the same file, however the next call spells it
            calls = [{"path": _literal_rule(t)} for t in targets] or [args]
            kept = [remembered_rule(tool, call) for call in calls]
            self.remembered.extend(kept)
            session = getattr(harness, "session", None)
            for call in calls if session is not None else []:
                # kept in the session: a resumed or restarted run of it allows them too
                record_answer(session, tool, call, "always", event.tool_call_id)
            notice = getattr(harness, "notice", None)
            if notice is not None:  # the user sees what "always" allowed
                await notice("permissions", f"always allowed for this session: {kept[0].text}")
            return None
        if answer in ("y", "yes"):
            return None
        return ToolCallResult(block=True, reason=f"{label}: denied by the user")

    def decide(
        self, tool: str, args: Mapping[str, Any], cwd: str, targets: Sequence[str] = ()
    ) -> Decision:
        """The rules' decision on a call; for a file tool, on each path it resolves to
        (``targets``: as written and real, see ``call_targets``), the strictest of them."""
        calls: list[Mapping[str, Any]] = [{**args, "path": t} for t in targets] or [args]
        decisions = [
            decide(self.rules, tool, call, mode=self.mode, cwd=cwd, remembered=self.remembered)
            for call in calls
        ]
        return max(decisions, key=lambda d: _STRICTNESS[d.outcome])

    def _walks(self, tool: str) -> bool:
        """Whether ``tool`` looks inside folders and a deny or ask rule names paths for it."""
        return tool in _WALKERS and any(
            rule.specifier is not None and tool in _COVERS.get(rule.tool, {rule.tool})
            for rule in [*self.rules.deny, *self.rules.ask]
        )

    def for_tools(self, cwd: str) -> RulesFilter:
        """The PathFilter the folder-walking tools get in their context."""
        return RulesFilter(self, cwd)


_STRICTNESS = {"allow": 0, "ask": 1, "deny": 2}
_WALKERS = frozenset({"ls", "grep", "find"})  # the tools that open what a folder holds


class RulesFilter:
    """The gate's rules for the files a walk finds (a ``paths.PathFilter``).

    A file inside a walk is skipped when a deny rule names it, or an ask rule names it
    that did not name the walk's own folder (the user was asked about the folder, never
    about that file); in bypass mode only deny rules skip files. An "always" answer for
    the file lets it through.
    """

    __slots__ = ("cwd", "gate")

    def __init__(self, gate: PermissionGate, cwd: str) -> None:
        self.gate = gate
        self.cwd = cwd

    def for_walk(self, tool: str, root: Path) -> Callable[[str, str], bool]:
        rules, cwd = self.gate.rules, self.cwd
        remembered = list(self.gate.remembered)
        deny = list(rules.deny)
        at_root = [{"path": str(root)}, {"path": os.path.realpath(root)}]
        ask = (
            []
            if self.gate.mode == "bypass"
            else [r for r in rules.ask if not any(r.matches(tool, a, cwd) for a in at_root)]
        )

        def visible(path: str, real: str) -> bool:
            names = [path, real] if real != path else [path]
            for target in [*names, *other_names(real, cwd)]:
                call = {"path": target}
                if any(rule.matches(tool, call, cwd) for rule in deny):
                    return False
                if any(rule.matches(tool, call, cwd) for rule in ask) and not any(
                    rule.matches(tool, call, cwd) for rule in remembered
                ):
                    return False
            return True

        return visible


def tool_context_with_rules(context: Any, gate: PermissionGate | None, cwd: str) -> Any:
    """The tool context the tools get: ``context`` with the gate's PathFilter under
    ``path_filter`` (a copy: the caller's mapping is not changed). A context that is not
    a mapping is passed through unchanged (and the gate asks before such a context's
    ``ls``, ``grep`` or ``find`` runs while deny or ask rules name paths)."""
    if gate is None:
        return context
    if context is None:
        return {PATH_FILTER: gate.for_tools(cwd)}
    if isinstance(context, Mapping):
        return {**context, PATH_FILTER: gate.for_tools(cwd)}
    return context


def permission_hook(config: Mapping[str, Any] | None, mode: str = "default") -> Any:
    """The spec's ``permissions:`` as a ``tool_call`` HookSpec (what generated code calls)."""
    from harnessc.runtime.core.hooks import HookSpec

    gate = PermissionGate(PermissionRules.from_config(config), mode)
    return HookSpec(moment="tool_call", handler=gate, name="permissions")


def with_parent_rules(hooks: Sequence[Any], parent: PermissionGate) -> list[Any]:
    """A sub-agent's hooks with its parent's deny and ask rules added to its own: a
    sub-agent may add rules, never lift one of its parent's (its default stays its own).
    Its gate is a new one (an agent without rules gets one)."""
    from harnessc.runtime.core.hooks import HookSpec

    gate = find_gate(hooks)
    own = gate.rules if gate is not None else PermissionRules(default="allow")

    def merged(mine: list[Rule], theirs: list[Rule]) -> list[Rule]:
        texts = {rule.text for rule in mine}
        return [*mine, *(rule for rule in theirs if rule.text not in texts)]

    rules = PermissionRules(
        list(own.allow),
        merged(own.ask, parent.rules.ask),
        merged(own.deny, parent.rules.deny),
        own.default,
    )
    mine = PermissionGate(rules, gate.mode if gate is not None else "default")
    if gate is not None:
        mine.asker, mine.remembered = gate.asker, gate.remembered
    spec = HookSpec(moment="tool_call", handler=mine, name="permissions")
    if gate is None:
        return [*hooks, spec]
    return [spec if getattr(h, "handler", None) is gate else h for h in hooks]


def find_gate(hooks: Iterable[Any]) -> PermissionGate | None:
    """The PermissionGate among an options' hooks, if any."""
    for spec in hooks:
        if isinstance(getattr(spec, "handler", None), PermissionGate):
            return spec.handler  # type: ignore[no-any-return]
    return None


def record_answer(
    session: Any, tool: str, args: Mapping[str, Any], decision: str, call_id: str
) -> None:
    """Remember the user's answer to an ask in the session (``--approve`` / ``--deny``;
    ``always``: allow, and allow what the same rule as the interactive "always" names)."""
    session.append_custom(
        PERMISSION_ENTRY,
        {"tool": tool, "args": dict(args), "decision": decision, "callId": call_id},
    )


def recorded_answer(
    session: Any,
    tool: str,
    args: Mapping[str, Any],
    cwd: str = "",
    call_id: str | None = None,
) -> str | None:
    """The latest recorded answer for exactly this call (tool and arguments; with
    ``call_id``, to that call only: an answer is given to the one call it was shown);
    an ``always`` answer allows every call its remembered rule names."""
    if session is None:
        return None
    found: str | None = None
    for entry in session.entries():
        if entry.type != "custom" or entry.data.get("customType") != PERMISSION_ENTRY:
            continue
        data = entry.data.get("data")
        if not isinstance(data, dict):
            continue
        decision = data.get("decision")
        if decision == "always":
            held = data.get("args")
            rule = remembered_rule(str(data.get("tool")), held if isinstance(held, dict) else {})
            if rule.matches(tool, args, cwd or os.getcwd()):
                found = "allow"
        elif call_id is not None and data.get("callId") != call_id:
            continue
        elif data.get("tool") == tool and data.get("args") == dict(args):
            if decision in ("allow", "deny"):
                found = str(decision)
    return found


def _label(tool: str, args: Mapping[str, Any]) -> str:
    if tool == "bash":
        return f"Bash({args.get('command', '')})"
    if tool in _PATH_TOOLS:
        return f"{tool}({call_path(args)})"
    return tool


async def _tool_context(harness: HarnessContext, cwd: str) -> Any:
    """The tool context the harness will hand the tools (the session's cwd for a host
    without one)."""
    source = getattr(harness, "tool_context", None)
    if source is not None and callable(getattr(source, "resolve", None)):
        return await source.resolve()
    return {"cwd": cwd}


def _call_targets(tool: str, args: Mapping[str, Any], context: Any) -> list[str]:
    """The paths a file tool's call will open, resolved as the tool resolves them: in the
    tool context (its workspace), ``..`` folded, symlinks followed and not."""
    if tool not in _PATH_TOOLS:
        return []
    try:
        literal, real = call_targets(call_path(args), context)
    except PathError:  # the tool refuses such a path itself
        return []
    # a hard link is the file under another name: every name of it is decided
    links = other_names(str(real), _workspace_of(context, str(real)))
    return [str(literal), str(real), *links]


def _workspace_of(context: Any, fallback: str) -> str:
    from harnessc.runtime.tools.paths import tool_env

    env = tool_env(context)
    return str(env.workspace or env.base or os.path.dirname(fallback))


def _carries_filter(context: Any) -> bool:
    return context is None or isinstance(context, Mapping)


def _literal_rule(path: str) -> str:
    """An absolute path as a path rule naming exactly it (glob characters escaped)."""
    return "".join("\\" + ch if ch in "*?[]\\!# " else ch for ch in path)


def _workspace(harness: HarnessContext) -> str:
    cwd = getattr(getattr(harness, "session", None), "cwd", None)
    return str(cwd) if isinstance(cwd, str) and cwd else os.getcwd()


def pending_asks(session: Any) -> dict[str, dict[str, Any]]:
    """Held calls not answered yet: call id -> {"tool", "args"} (from the session)."""
    pending: dict[str, dict[str, Any]] = {}
    for entry in session.entries():
        if entry.type != "custom" or entry.data.get("customType") != PERMISSION_ENTRY:
            continue
        data = entry.data.get("data")
        if not isinstance(data, dict):
            continue
        call_id = str(data.get("callId", ""))
        if data.get("decision") == "pending":
            pending[call_id] = {"tool": data.get("tool"), "args": data.get("args") or {}}
        else:
            pending.pop(call_id, None)
    return pending


def describe_call(tool: str, args: Mapping[str, Any]) -> str:
    """``Bash(git push)``, ``write(notes.md)``: a call as the rules name it."""
    return _label(tool, args)


_CLAUDE_MODES = {
    "default": "default",
    "accept-edits": "acceptEdits",
    "plan": "plan",
    "bypass": "bypassPermissions",
}


def claude_permission_mode(harness: HarnessContext) -> str:
    """The permission mode as Claude Code names it, for hooks (``permission_mode``):
    the gate's mode, or ``bypassPermissions`` for an agent without permission rules."""
    options = getattr(harness, "options", None)
    gate = find_gate(getattr(options, "hooks", ()) or ())
    return _CLAUDE_MODES.get(gate.mode, "default") if gate is not None else "bypassPermissions"


def _with_annotations(decision: Decision, harness: Any, tool: str) -> Decision:
    """``decision`` with what the tool's MCP server says about it (its annotations)."""
    tools = getattr(harness, "tools", None)
    found = tools.get(tool) if isinstance(tools, Mapping) else None
    hints = getattr(found, "annotations", None)
    if not isinstance(hints, Mapping) or not hints:
        return decision
    said = [f'"{hints["title"]}"'] if isinstance(hints.get("title"), str) else []
    for key, yes, no in _HINT_WORDS:
        value = hints.get(key)
        if isinstance(value, bool):
            said.append(yes if value else no)
    if not said:
        return decision
    server = getattr(found, "label", "").split(":")[0] or "its server"
    return Decision(decision.outcome, f"{decision.reason}; {server} says: {', '.join(said)}")


_HINT_WORDS = (
    ("readOnlyHint", "read-only", "may change things"),
    ("destructiveHint", "destructive", "not destructive"),
    ("idempotentHint", "idempotent", "not idempotent"),
    ("openWorldHint", "reaches the outside world", "closed world"),
)
