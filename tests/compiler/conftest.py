"""Shared fixtures of the compiler tests (pytest runs with --import-mode=importlib, so
test modules share helpers through fixtures, not imports)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from harnessc.spec import LoadedSpec, format_diagnostics, load_spec, parse_spec

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def repo() -> Path:
    return REPO


@pytest.fixture
def in_repo(monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(REPO)
    return REPO


@pytest.fixture
def load_ok() -> Callable[[Path], LoadedSpec]:
    def load(path: Path) -> LoadedSpec:
        loaded = load_spec(path, path.relative_to(REPO).as_posix())
        assert loaded.ok, format_diagnostics(loaded.diagnostics)
        return loaded

    return load


@pytest.fixture
def parse_ok() -> Callable[[str, Path], LoadedSpec]:
    def parse(text: str, where: Path) -> LoadedSpec:
        loaded = parse_spec(text.encode(), where)
        assert loaded.ok, format_diagnostics(loaded.diagnostics)
        return loaded

    return parse


@pytest.fixture
def ruff() -> Callable[..., subprocess.CompletedProcess[str]]:
    exe = shutil.which("ruff")
    command = [exe] if exe else [sys.executable, "-m", "ruff"]

    def run(
        *args: str, cwd: Path = REPO, stdin: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*command, *args], cwd=cwd, input=stdin, capture_output=True, text=True, timeout=60
        )

    return run
