from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from harnessc.runtime import AgentHarness, AgentHarnessOptions, EventLog, Model
from harnessc.runtime.providers.scripted import ScriptedProvider

MakeHarness = Callable[..., tuple[AgentHarness, EventLog]]


@pytest.fixture
def make_harness() -> MakeHarness:
    def make(
        replies: Any,
        tools: Any = (),
        *,
        context_window: int = 128_000,
        **options: Any,
    ) -> tuple[AgentHarness, EventLog]:
        provider = replies if isinstance(replies, ScriptedProvider) else ScriptedProvider(replies)
        harness = AgentHarness(
            AgentHarnessOptions(
                models={
                    "main": Model(
                        id="scripted-1",
                        api="scripted",
                        provider="test",
                        context_window=context_window,
                    )
                },
                tools=list(tools),
                provider=provider,
                **options,
            )
        )
        log = EventLog()
        harness.subscribe(log)
        return harness, log

    return make


@pytest.fixture
def script(tmp_path: Path) -> Callable[[str, str], str]:
    """Write an executable shell script into tmp_path; returns its path."""

    def write(name: str, body: str) -> str:
        path = tmp_path / name
        path.write_text("#!/bin/sh\n" + body, encoding="utf-8")
        path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
        return os.fspath(path)

    return write
