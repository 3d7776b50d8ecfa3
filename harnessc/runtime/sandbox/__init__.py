"""The kernel-enforced boundary of every program an agent runs on the model's behalf
(the bash tool, command hooks, stdio MCP servers): the policy (``policy``), made
concrete for one process (``layout``), enforced by bubblewrap (``bwrap``, ``probe``),
with the network reachable only through the allow-listing proxy (``proxy``, ``bridge``).

A generated module names the policy only; the spawning side loads when an agent that
can start programs is built (``spawn.check_at_start``) or a program starts. ``probe``
stays eager: its function shares its submodule's name, which the submodule's import
would otherwise put in its place.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harnessc.runtime.sandbox.policy import (
    DEFAULT_UNREADABLE,
    SandboxMode,
    SandboxPolicy,
    host_allowed,
    policy_from_rules,
)
from harnessc.runtime.sandbox.probe import Enforcement, probe
from harnessc.runtime.support.lazy import lazy_exports

if TYPE_CHECKING:
    from harnessc.runtime.sandbox.spawn import (
        SandboxUnavailable,
        current_policy,
        require,
        sandboxed,
        using,
    )

__all__ = [
    "DEFAULT_UNREADABLE",
    "Enforcement",
    "SandboxMode",
    "SandboxPolicy",
    "SandboxUnavailable",
    "current_policy",
    "host_allowed",
    "policy_from_rules",
    "probe",
    "require",
    "sandboxed",
    "using",
]

# The spawning side's public names -> their module, imported on first use.
_EXPORTS: dict[str, str] = {
    "SandboxUnavailable": "harnessc.runtime.sandbox.spawn",
    "current_policy": "harnessc.runtime.sandbox.spawn",
    "require": "harnessc.runtime.sandbox.spawn",
    "sandboxed": "harnessc.runtime.sandbox.spawn",
    "using": "harnessc.runtime.sandbox.spawn",
}

__getattr__, __dir__ = lazy_exports(globals(), _EXPORTS, __all__)
