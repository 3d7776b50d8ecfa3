"""The kernel-enforced boundary of every program an agent runs on the model's behalf
(the bash tool, command hooks, stdio MCP servers): the policy (``policy``), made
concrete for one process (``layout``), enforced by bubblewrap (``bwrap``, ``probe``),
with the network reachable only through the allow-listing proxy (``proxy``, ``bridge``).
"""

from harnessc.runtime.sandbox.policy import (
    DEFAULT_UNREADABLE,
    SandboxMode,
    SandboxPolicy,
    host_allowed,
    policy_from_rules,
)
from harnessc.runtime.sandbox.probe import Enforcement, probe
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
