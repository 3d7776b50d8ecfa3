"""The sandbox policy: what every process started on the model's behalf may touch.

A :class:`SandboxPolicy` is built once, from the spec (the generated module writes it
out) and the operator's command line (``--sandbox on|off``); nothing the model does
changes it during a run. It says:

- ``mode``: ``on`` (required: an agent whose machine cannot enforce it does not start),
  ``auto`` (enforced where the machine can, else the agent says at start why not and runs
  without it) or ``off`` (no sandbox);
- ``writable``: paths writable besides the workspace (which always is) and a private
  ``/tmp``; everything else is read-only;
- ``unreadable``: paths no program may open, written as the ``Read(...)`` rules write
  them (``./.env``, ``~/.ssh``, ``/etc/shadow``, a bare name such as ``*.pem`` at any
  depth of the workspace); :data:`DEFAULT_UNREADABLE` (credential files, harnessc's own
  data folder) always are;
- ``network``: the hosts programs may reach, through a proxy inside the sandbox
  (``example.com``, ``*.example.com``, ``host:port``); none: no network at all.

``narrowed(child)`` is a sub-agent's policy: its own, never wider than its parent's.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

from msgspec import Struct
from msgspec.structs import force_setattr

__all__ = [
    "DEFAULT_UNREADABLE",
    "MODES",
    "SandboxMode",
    "SandboxPolicy",
    "host_allowed",
    "policy_from_rules",
]

SandboxMode = Literal["on", "auto", "off"]
MODES: tuple[SandboxMode, ...] = ("on", "auto", "off")
_STRENGTH = {"off": 0, "auto": 1, "on": 2}

# Credential files and harnessc's own data: never readable by a sandboxed program.
DEFAULT_UNREADABLE: tuple[str, ...] = (
    "~/.ssh",
    "~/.gnupg",
    "~/.aws",
    "~/.azure",
    "~/.config/gcloud",
    "~/.kube",
    "~/.docker/config.json",
    "~/.netrc",
    "~/.git-credentials",
    "~/.npmrc",
    "~/.pypirc",
    "~/.config/gh",
    "~/.password-store",
    "./.harnessc",
)


class SandboxPolicy(Struct, frozen=True):
    """The boundary of the programs an agent runs (see the module doc). The paths and
    hosts are kept as tuples, each once, hosts in lower case."""

    mode: SandboxMode = "on"
    writable: Sequence[str] = ()
    unreadable: Sequence[str] = ()
    network: Sequence[str] = ()

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"sandbox mode must be on, auto or off, not {self.mode!r}")
        force_setattr(self, "writable", tuple(dict.fromkeys(self.writable)))
        force_setattr(self, "unreadable", tuple(dict.fromkeys(self.unreadable)))
        force_setattr(self, "network", tuple(dict.fromkeys(h.lower() for h in self.network)))

    @property
    def enabled(self) -> bool:
        return self.mode != "off"

    def with_mode(self, mode: SandboxMode) -> SandboxPolicy:
        """The same policy with another mode (the operator's ``--sandbox``)."""
        return SandboxPolicy(mode, self.writable, self.unreadable, self.network)

    def narrowed(self, child: SandboxPolicy | None) -> SandboxPolicy:
        """A sub-agent's policy: ``child``'s, never wider than this one.

        The stricter mode holds; a path is writable only when both let it be written
        (the child's path, if it lies in one of this policy's, or this one's, if it lies in
        one of the child's); every unreadable path of either stays unreadable; a host is
        reachable only when both allow it.
        """
        if child is None:
            return self
        mode = max(self.mode, child.mode, key=_STRENGTH.__getitem__)
        writable = [p for p in child.writable if _under_any(p, self.writable)]
        writable += [p for p in self.writable if _under_any(p, child.writable)]
        network = [h for h in child.network if host_allowed(h, self.network)]
        return SandboxPolicy(mode, writable, (*self.unreadable, *child.unreadable), network)

    def widens(self, parent: SandboxPolicy) -> list[str]:
        """What this policy allows beyond ``parent``'s (for ``harnessc check``)."""
        found: list[str] = []
        if self.mode == "off" and parent.mode != "off":
            found.append(f"sandbox off under a parent with sandbox {parent.mode}")
        found += [f"writable {p}" for p in self.writable if not _under_any(p, parent.writable)]
        found += [f"network {h}" for h in self.network if not host_allowed(h, parent.network)]
        missing = [p for p in parent.unreadable if p not in self.unreadable]
        found += [f"readable {p}" for p in missing]
        return found

    def describe(self) -> list[str]:
        """The policy as lines (``harnessc check``, ``harnessc doctor``)."""
        if self.mode == "off":
            return ["sandbox: off (programs run with the agent's own access)"]
        required = "required" if self.mode == "on" else "where this machine can enforce it"
        net = ", ".join(self.network) if self.network else "none"
        return [
            f"sandbox: {self.mode} ({required})",
            "  writable: the workspace, a private /tmp" + "".join(f", {p}" for p in self.writable),
            "  unreadable: "
            + ", ".join((*DEFAULT_UNREADABLE, "harnessc's data folder", *self.unreadable)),
            f"  network: {net}" + (" (through the sandbox's proxy)" if self.network else ""),
        ]


def _norm(path: str) -> str:
    return os.path.normpath(path).rstrip("/") or "/"


def _under_any(path: str, roots: Sequence[str]) -> bool:
    target = _norm(path)
    for root in roots:
        base = _norm(root)
        if target == base or target.startswith(base.rstrip("/") + "/"):
            return True
    return False


def host_allowed(host: str, allowed: Iterable[str]) -> bool:
    """Whether ``host`` (``name`` or ``name:port``) is named by an entry of ``allowed``:
    ``name`` (any port), ``name:port``, ``*.name`` (its subdomains, any port)."""
    name, _, port = host.lower().rpartition(":") if _has_port(host) else (host.lower(), "", "")
    name = name.strip("[]").rstrip(".")
    for entry in allowed:
        entry = entry.lower()
        e_name, _, e_port = entry.rpartition(":") if _has_port(entry) else (entry, "", "")
        e_name = e_name.strip("[]").rstrip(".")
        if e_port and e_port != port:
            continue
        if e_name.startswith("*."):
            if name.endswith(e_name[1:]) and name != e_name[2:]:
                return True
        elif name == e_name:
            return True
    return False


def _has_port(text: str) -> bool:
    head, sep, tail = text.rpartition(":")
    return bool(sep) and tail.isdigit() and (not head.count(":") or head.endswith("]"))


# -- what the permission rules add ---------------------------------------------------------

_GLOB = frozenset("*?[")


def policy_from_rules(
    mode: SandboxMode,
    *,
    writable: Iterable[str] = (),
    unreadable: Iterable[str] = (),
    network: Iterable[str] = (),
    permissions: Mapping[str, Any] | None = None,
) -> SandboxPolicy:
    """A policy from the spec's ``sandbox:`` section and its ``permissions:``: every
    ``Read(PATH)`` deny makes PATH unreadable, every ``Edit(PATH)`` / ``Write(PATH)``
    allow makes PATH's folder (up to its first wildcard) writable, every
    ``WebFetch(domain:HOST)`` allow lets programs reach HOST."""
    extra_writable: list[str] = []
    extra_unreadable: list[str] = []
    extra_network: list[str] = []
    for tool, spec in _rules(permissions, "deny"):
        if tool in ("Read", "read") and spec:
            extra_unreadable.append(_without_contents(spec))
    for tool, spec in _rules(permissions, "allow"):
        if tool in ("Edit", "Write", "MultiEdit", "edit", "write") and spec:
            folder = _literal_prefix(spec)
            if folder:
                extra_writable.append(folder)
        elif tool == "WebFetch" and spec and spec.startswith("domain:"):
            extra_network.append(spec[len("domain:") :].strip())
    return SandboxPolicy(
        mode,
        [*writable, *extra_writable],
        [*unreadable, *extra_unreadable],
        [*network, *extra_network],
    )


def _rules(permissions: Mapping[str, Any] | None, key: str) -> list[tuple[str, str | None]]:
    import re

    found: list[tuple[str, str | None]] = []
    for text in (permissions or {}).get(key) or ():
        match = re.match(r"^\s*([A-Za-z_][A-Za-z0-9_.-]*)\s*(?:\((.*)\))?\s*$", str(text), re.S)
        if match is not None:
            spec = match.group(2)
            found.append((match.group(1), spec.strip() if spec is not None else None))
    return found


def _without_contents(spec: str) -> str:
    """``~/.ssh/**`` names what ``~/.ssh`` holds: the folder itself is made unreadable."""
    while spec.endswith("/**") and len(spec) > 3:
        spec = spec[:-3]
    return spec


def _literal_prefix(spec: str) -> str | None:
    """The folder a write rule names, up to its first wildcard (``~/notes/**`` ->
    ``~/notes``, ``./build/*.o`` -> ``./build``); None for a bare name (``*.md``: at any
    depth of the workspace, which is writable anyway)."""
    if spec.startswith("//"):
        spec = spec[1:]
    if not spec.startswith(("/", "~", "./", "../")) and "/" not in spec.rstrip("/"):
        return None
    parts: list[str] = []
    for part in spec.split("/"):
        if any(ch in _GLOB for ch in part):
            break
        parts.append(part)
    folder = "/".join(parts).rstrip("/")
    if not folder and spec.startswith("/"):
        return "/"
    return folder or None
