"""Whether this machine can enforce a sandbox, and exactly why not when it cannot.

The mechanism is bubblewrap (``bwrap``, Debian's and most distributions' package
``bubblewrap``): it builds the process's view of the machine from Linux namespaces
(mount, PID, network, IPC, UTS, user where needed) with every capability dropped. The
probe looks for ``bwrap`` on the PATH and starts one empty sandbox with the options every
sandboxed process gets; its answer is kept for the life of the process.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys

from msgspec import Struct

__all__ = ["INSTALL_HINT", "Enforcement", "probe", "reset_probe"]

INSTALL_HINT = (
    "install bubblewrap: `apt-get install bubblewrap` (Debian, Ubuntu), "
    "`dnf install bubblewrap` (Fedora), `pacman -S bubblewrap` (Arch)"
)
_PROBE_TIMEOUT_S = 20.0


class Enforcement(Struct, frozen=True):
    """The probe's answer: ``available``, and ``reason`` (why not, or what enforces it)."""

    available: bool
    reason: str
    program: str | None  # the bwrap executable
    version: str


def _unavailable(reason: str, program: str | None = None, version: str = "") -> Enforcement:
    return Enforcement(False, reason, program, version)


@functools.cache
def probe() -> Enforcement:
    """Can a process be sandboxed here? (Started once per process, about 15 ms.)"""
    if not sys.platform.startswith("linux"):
        return _unavailable(
            f"the sandbox needs Linux namespaces; this is {sys.platform} "
            "(run the agent in a Linux container or VM, or write `sandbox: off`)"
        )
    program = shutil.which("bwrap")
    if program is None:
        return _unavailable(f"bubblewrap (bwrap) is not on the PATH; {INSTALL_HINT}")
    try:
        version = subprocess.run(
            [program, "--version"], capture_output=True, text=True, timeout=_PROBE_TIMEOUT_S
        ).stdout.strip()
        trial = subprocess.run(
            [*_TRIAL, "--", "/bin/sh", "-c", "exit 0"],
            executable=program,
            capture_output=True,
            text=True,
            timeout=_PROBE_TIMEOUT_S,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return _unavailable(f"{program} cannot be run: {exc}", program)
    if trial.returncode != 0:
        said = (trial.stderr or "").strip().splitlines()
        detail = said[-1] if said else f"exit code {trial.returncode}"
        return _unavailable(
            f"{program} cannot make a sandbox here: {detail}{_hint(detail)}", program
        )
    return Enforcement(True, f"enforced by {version or 'bubblewrap'} ({program})", program, version)


_TRIAL = [
    "bwrap",
    "--ro-bind",
    "/",
    "/",
    "--dev",
    "/dev",
    "--proc",
    "/proc",
    "--tmpfs",
    "/tmp",
    "--unshare-all",
    "--cap-drop",
    "ALL",
    "--die-with-parent",
]


def _hint(detail: str) -> str:
    lowered = detail.lower()
    if "namespace" in lowered or "permission" in lowered or "operation not permitted" in lowered:
        hints = [
            "the kernel refuses new user namespaces to this user",
            "check `sysctl kernel.unprivileged_userns_clone` (Debian: 1), "
            "`sysctl user.max_user_namespaces` (not 0), "
            "`sysctl kernel.apparmor_restrict_unprivileged_userns` (Ubuntu 24.04: 0, or an "
            "AppArmor profile for bwrap); in a container, run it with user namespaces allowed",
        ]
        if os.geteuid() != 0:
            hints.append("or run bwrap setuid root")
        return " (" + "; ".join(hints) + ")"
    return ""


def reset_probe() -> None:
    """Forget the probe's answer (tests that change the PATH)."""
    probe.cache_clear()
