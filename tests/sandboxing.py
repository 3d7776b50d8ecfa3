"""Tests that need the kernel-enforced sandbox: they skip, saying why, on a machine that
cannot make one, and fail under CI (``CI`` set), whose machine can (``.ci/run`` installs
bubblewrap)."""

from __future__ import annotations

import os

import pytest

from harnessc.runtime.sandbox import probe

__all__ = ["require_sandbox"]


def require_sandbox() -> None:
    found = probe()
    if found.available:
        return
    if os.environ.get("CI"):
        pytest.fail(f"CI must enforce the sandbox, but: {found.reason}")
    pytest.skip(f"this machine cannot make a sandbox: {found.reason}")
