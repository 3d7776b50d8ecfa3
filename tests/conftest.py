"""Suite-wide isolation: a user-level context file (~/.config/harnessc/AGENTS.md) of the
machine's user never reaches an agent under test."""

from __future__ import annotations

import os
import tempfile

import pytest

_HOME = tempfile.TemporaryDirectory(prefix="harnessc-test-home-")


def pytest_configure(config: pytest.Config) -> None:
    os.environ["HOME"] = _HOME.name


def pytest_unconfigure(config: pytest.Config) -> None:
    _HOME.cleanup()
