"""A spec's sandbox: its ``sandbox:`` section with what its permission rules add.

``sandbox_policy(spec)`` is what the compiler writes into the generated module and what
``harnessc check`` prints: the mode (omitted: ``auto``), the writable paths (the
section's and each ``Edit``/``Write`` allow rule's folder), the unreadable paths (the
section's, each ``Read`` deny rule's, and a session folder inside the workspace), the
network hosts (the section's and each ``WebFetch(domain:...)`` allow rule's).
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from harnessc.runtime.sandbox.policy import SandboxPolicy, policy_from_rules
from harnessc.spec.models import AgentSpec

__all__ = ["sandbox_lines", "sandbox_policy"]


def sandbox_policy(spec: AgentSpec) -> SandboxPolicy:
    settings = spec.sandbox_settings
    unreadable = list(settings.filesystem.unreadable)
    folder = spec.session.dir if spec.session.repo == "jsonl" else None
    if folder and not folder.startswith("${"):
        # the agent's own sessions: a program that could write them could forge answers
        unreadable.append(
            folder if os.path.isabs(folder) or folder.startswith("~") else _dot(folder)
        )
    permissions = spec.permissions.model_dump() if spec.permissions is not None else None
    return policy_from_rules(
        settings.mode,
        writable=settings.filesystem.writable,
        unreadable=unreadable,
        network=settings.network.allow,
        permissions=permissions,
    )


def _dot(path: str) -> str:
    return path if path.startswith("./") else "./" + path


def sandbox_lines(spec: AgentSpec) -> list[str]:
    """The effective policy as ``harnessc check`` prints it, with each MCP server that
    runs outside it and why."""
    lines = sandbox_policy(spec).describe()
    if spec.mcp is not None:
        for name, server in spec.mcp.servers.items():
            if server.unsandboxed:
                lines.append(f"  mcp server {name!r} runs outside it: {server.unsandboxed}")
    return lines


def subagent_widening(
    parent: AgentSpec, child: AgentSpec, child_tools: Iterable[str] = ()
) -> list[str]:
    """What a spec sub-agent asks for beyond its parent: a deny or ask rule of the
    parent it lacks (for a tool it has: ``child_tools``), a wider sandbox. Each holds for
    it anyway at run time (it inherits the parent's rules and sandbox and may only narrow
    them); check says so."""
    from harnessc.runtime.permissions.rules import PermissionError_, parse_rule

    found: list[str] = []
    tools = set(child_tools) | ({"task"} if child.agents is not None else set())
    if parent.permissions is not None:
        own = child.permissions
        for key in ("deny", "ask"):
            mine = set(getattr(own, key)) if own is not None else set()
            if key == "ask" and own is not None:
                mine |= set(own.deny)  # a deny is stricter than the parent's ask
            for rule in getattr(parent.permissions, key):
                try:
                    tool = parse_rule(rule).tool
                except PermissionError_:
                    continue
                covered = {"read": {"read", "ls", "grep", "find"}, "edit": {"edit", "write"}}
                if rule not in mine and tools & covered.get(tool, {tool}):
                    found.append(f"lacks the parent's {key} rule {rule}")
    widened = sandbox_policy(child).widens(sandbox_policy(parent))
    found += [f"sandbox: {item}" for item in widened]
    return found
