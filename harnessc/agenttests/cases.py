"""``*.tests.yaml`` files: the agent they test and its cases, read and checked.

agent: review.yaml                      # the spec, relative to this file
cases:
  - name: approves a small fix
    prompt: review the plan in plan.md
    files: {plan.md: "rename a variable"}   # laid in a fresh workspace
    cassette: cassettes/approves.jsonl      # recorded model replies (inside this folder)
    answers: {ask_user: "yes"}              # results of external tools, by tool name
    approvals: {write: allow}               # answers to permission asks, by tool name
    expect:
      output: {verdict: approve}            # subset of the typed result
      tools_called: [read]                  # in this order (others may come between)
      tools_not_called: [bash]
      final_text_matches: "(?i)approve"
      max_turns: 3
      files: {plan.md: "rename a variable"} # the workspace after the run
Paths (``files``, ``expect.files``, ``cassette``) are relative and stay inside the
workspace or this file's folder: a tests file never reads or writes anything else.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

__all__ = ["Case", "Expect", "TestFile", "TestFileError", "discover", "load_test_file"]

SUFFIXES = (".tests.yaml", ".tests.yml")
_SKIP_DIRS = {"__pycache__", "node_modules", "venv", ".venv", "site-packages"}


class TestFileError(ValueError):
    """A tests file that cannot be read or does not validate (the message names where)."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


def _relative_inside(path: str, where: str) -> str:
    """``path`` when it is relative and stays inside (no ``..``); ValueError otherwise:
    a tests file never names a file outside its case's workspace or its own folder."""
    parts = Path(path).parts
    if Path(path).is_absolute() or ".." in parts or not parts:
        raise ValueError(f"{path!r} must be a relative path inside {where}")
    return path


class Expect(_Model):
    """What must hold after the run; every key is optional."""

    status: Literal["done", "paused", "awaiting_tool", "error"] = "done"
    """How the run must end (after every answer and approval was given)."""
    output: Any = None
    """A subset of the typed result: mappings may hold more keys, lists match item by item."""
    tools_called: list[str] | None = None
    """Tools called in this order (other calls may come between them)."""
    tools_not_called: list[str] | None = None
    """Tools that must not be called."""
    final_text_matches: str | None = None
    """A regular expression searched in the text of the last reply."""
    max_turns: int | None = Field(default=None, gt=0)
    """The most model replies the run may take."""
    files: dict[str, str | None] | None = None
    """The workspace after the run: path -> content (None: the file must not exist)."""

    @field_validator("files")
    @classmethod
    def _inside(cls, value: dict[str, str | None] | None) -> dict[str, str | None] | None:
        for path in value or {}:
            _relative_inside(path, "the workspace")
        return value

    @field_validator("final_text_matches")
    @classmethod
    def _regex(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                re.compile(value)
            except re.error as exc:
                raise ValueError(f"not a regular expression: {exc}") from None
        return value


class Case(_Model):
    """One case: a prompt run from scratch in its own workspace against its cassette."""

    name: str = Field(min_length=1)
    prompt: str = Field(min_length=1)
    cassette: str = Field(min_length=1)
    files: dict[str, str] = Field(default_factory=dict)
    answers: dict[str, Any] = Field(default_factory=dict)
    approvals: dict[str, Literal["allow", "deny"]] = Field(default_factory=dict)
    expect: Expect = Field(default_factory=Expect)

    @field_validator("files")
    @classmethod
    def _inside(cls, value: dict[str, str]) -> dict[str, str]:
        for path in value:
            _relative_inside(path, "the workspace")
        return value

    @field_validator("cassette")
    @classmethod
    def _cassette_inside(cls, value: str) -> str:
        return _relative_inside(value, "the tests file's folder")


class TestFile(_Model):
    """A tests file: the agent's spec and its cases."""

    agent: str = Field(min_length=1)
    cases: list[Case] = Field(min_length=1)
    path: Path = Field(default=Path(), exclude=True)

    @field_validator("cases")
    @classmethod
    def _unique(cls, value: list[Case]) -> list[Case]:
        seen: set[str] = set()
        for case in value:
            if case.name in seen:
                raise ValueError(f"two cases are named {case.name!r}")
            seen.add(case.name)
        return value

    @property
    def spec_path(self) -> Path:
        return (self.path.parent / self.agent).resolve()

    def cassette_path(self, case: Case) -> Path:
        """The case's cassette; TestFileError when a link leads it out of the tests
        file's folder (the path itself is checked when the file is read)."""
        folder = self.path.parent.resolve()
        path = (folder / case.cassette).resolve()
        if not path.is_relative_to(folder):
            raise TestFileError(
                f"{self.path}: cases: {case.name}: cassette {case.cassette!r} leads outside "
                "the tests file's folder"
            )
        return path


def load_test_file(path: Path) -> TestFile:
    """The tests file at ``path``; TestFileError naming the file and the key otherwise."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise TestFileError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except yaml.YAMLError as exc:
        raise TestFileError(f"{path}: not YAML: {exc}") from None
    if not isinstance(data, dict):
        raise TestFileError(f"{path}: expected a mapping with agent: and cases:")
    try:
        loaded = TestFile.model_validate(data)
    except ValidationError as exc:
        problems = []
        for error in exc.errors(include_url=False):
            where = ".".join(str(part) for part in error["loc"]) or "(top)"
            problems.append(f"{path}: {where}: {error['msg']}")
        raise TestFileError("\n".join(problems)) from None
    loaded.path = path.resolve()
    return loaded


def discover(targets: Iterable[str | os.PathLike[str]]) -> list[Path]:
    """The ``*.tests.yaml`` files named, or found below the folders named (sorted)."""
    found: list[Path] = []
    for target in targets:
        path = Path(target)
        if path.is_dir():
            for root, dirs, files in os.walk(path):
                dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in _SKIP_DIRS)
                found.extend(Path(root) / name for name in sorted(files) if name.endswith(SUFFIXES))
        else:
            found.append(path)
    return list(dict.fromkeys(found))
