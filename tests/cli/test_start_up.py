"""A generated agent's process keeps its start-up out of the run's garbage collections;
a program calling the command line in-process keeps its collector as it was."""

from __future__ import annotations

import gc
import importlib.util
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from harnessc.runtime.cli.start_up import StartUp
from harnessc.runtime.support.collector import settle
from harnessc.testing import ProtocolServer

from .clikit import text_reply, tool_reply

AGENT = textwrap.dedent(
    """
    import gc
    import json
    import os

    from harnessc.runtime import AgentHarnessOptions, Model, env, run_cli
    from harnessc.runtime.session import Session
    from harnessc.runtime.tools import Tool, text_result


    async def _gc_state(call_id, params, signal, on_update, context):
        state = {"enabled": gc.isenabled(), "frozen": gc.get_freeze_count()}
        return text_result(json.dumps(state))


    def build_options(*, session=None, cwd=None):
        return AgentHarnessOptions(
            session=session or Session(),
            models={"main": Model(id="m", api="openai-completions",
                                  base_url=env("TEST_BASE_URL"), api_key_env="TEST_API_KEY")},
            model="main",
            tools=[Tool(name="gc_state", description="The collector's state.",
                        parameters={"type": "object", "properties": {}}, run=_gc_state)],
        )


    def main(argv=None):
        return run_cli(build_options, argv, agent_name="gc-agent")


    if __name__ == "__main__":
        raise SystemExit(main())
    """
)


@pytest.fixture
def agent(tmp_path: Path) -> Path:
    path = tmp_path / "gc_agent.py"
    path.write_text(AGENT)
    return path


def _tool_result(server: ProtocolServer) -> dict[str, object]:
    message = server.requests[-1].json["messages"][-1]
    assert message["role"] == "tool"
    return dict(json.loads(message["content"]))


def test_the_agents_own_process_freezes_its_start_up_and_collects_during_the_run(
    agent: Path, tmp_path: Path
) -> None:
    with ProtocolServer() as server:
        server.enqueue(tool_reply(("call_1", "gc_state", {})), text_reply("done"))
        env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
        env.update(TEST_BASE_URL=f"{server.url}/v1", TEST_API_KEY="sk-test")
        done = subprocess.run(
            [sys.executable, str(agent), "--no-session", "go"],
            capture_output=True,
            text=True,
            env=env,
            cwd=tmp_path,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        state = _tool_result(server)
    assert state["enabled"] is True
    # the modules, the harness and the network stack: tens of thousands of objects
    assert isinstance(state["frozen"], int) and state["frozen"] > 10_000


def test_a_command_line_called_in_process_leaves_the_collector_alone(
    agent: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No pause through start-up and no freeze of its own: the caller's collector runs
    as it did. (The process's first run settles it once, as any program's first run
    does: ``test_collector.py``; here it has happened before the call.)"""
    spec = importlib.util.spec_from_file_location("gc_agent_in_process", agent)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    settle()
    frozen = gc.get_freeze_count()
    with ProtocolServer() as server:
        server.enqueue(tool_reply(("call_1", "gc_state", {})), text_reply("done"))
        monkeypatch.setenv("TEST_BASE_URL", f"{server.url}/v1")
        monkeypatch.setenv("TEST_API_KEY", "sk-test")
        monkeypatch.chdir(tmp_path)
        assert module.main(["--no-session", "go"]) == 0
        state = _tool_result(server)
    # Frozen objects are still freed by reference counting: the count may only fall.
    assert state["enabled"] is True and state["frozen"] <= frozen
    assert gc.isenabled() and gc.get_freeze_count() <= frozen


def test_a_start_up_that_ends_without_a_run_turns_the_collector_back_on() -> None:
    frozen = gc.get_freeze_count()
    with pytest.raises(RuntimeError), StartUp(own_process=True):
        assert not gc.isenabled()
        raise RuntimeError("the options could not be built")
    assert gc.isenabled() and gc.get_freeze_count() == frozen


def test_a_collector_that_was_off_stays_off() -> None:
    gc.disable()
    try:
        with StartUp(own_process=True) as start_up:
            start_up.begin_run()
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()
