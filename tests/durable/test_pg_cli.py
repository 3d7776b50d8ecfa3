"""A compiled agent with ``session: {repo: postgres}``: ``--sessions``, ``--search``,
``--continue``, ``-i --continue`` and ``--session ID`` read and write the PostgreSQL
store (with and without ``durable:``), through the generated module in a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from harnessc.testing import ProtocolServer, ScriptedResponse, openai_events

from .test_spec_wiring import compiled

ROOT = Path(__file__).resolve().parents[2]

SPEC = textwrap.dedent(
    """\
    version: 1
    name: pg-cli
    models:
      main:
        provider: openai
        id: test-model
        base_url: ${TEST_BASE_URL}
        api_key_env: TEST_API_KEY
    session:
      repo: postgres
      url: ${DATABASE_URL}
    """
)
DURABLE = "durable:\n  database_url: sqlite:///.harnessc/durable.sqlite\n"


@dataclass
class PgAgent:
    module: Path
    work: Path
    env: dict[str, str]
    server: ProtocolServer

    def run(self, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, str(self.module), *args],
            capture_output=True,
            text=True,
            env=self.env,
            cwd=self.work,
            timeout=120,
            input=stdin,
        )

    def reply(self, *texts: str) -> None:
        for text in texts:
            self.server.enqueue(ScriptedResponse.sse(openai_events([text])))

    def user_texts(self, request_index: int) -> list[str]:
        """The user messages the model saw in one request."""
        messages = self.server.requests[request_index].json["messages"]
        return [str(m["content"]) for m in messages if m["role"] == "user"]


def _agent_env(server: ProtocolServer, pg_database: str, tmp_path: Path) -> dict[str, str]:
    """The agent's environment: the local server, the test database, no real keys."""
    return {
        **{k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")},
        "TEST_BASE_URL": f"{server.url}/v1",
        "TEST_API_KEY": "sk-test",
        "DATABASE_URL": pg_database,
        "PYTHONPATH": str(ROOT),
        "HOME": str(tmp_path / "home"),  # no readline history of the user's
    }


@pytest.fixture(params=["plain", "durable"])
def agent(request: pytest.FixtureRequest, tmp_path: Path, pg_database: str) -> Iterator[PgAgent]:
    spec = SPEC + (DURABLE if request.param == "durable" else "")
    module = compiled(tmp_path, spec)
    work = tmp_path / "work"
    work.mkdir()
    with ProtocolServer() as server:
        env = _agent_env(server, pg_database, tmp_path)
        yield PgAgent(module, work, env, server)


def pg_sessions(url: str) -> list[str]:
    from harnessc.runtime.session.postgres import PostgresSessionRepo

    repo = PostgresSessionRepo(url)
    try:
        return [meta.id for meta in repo.list()]
    finally:
        repo.close()


def test_listing_searching_and_continuing_in_postgres(agent: PgAgent, pg_database: str) -> None:
    empty = agent.run("--sessions")
    assert empty.returncode == 0, empty.stderr
    assert empty.stdout == "no sessions\n"
    assert agent.run("--search", "zebras").stdout == "no matches\n"

    agent.reply("zebras have stripes", "and they run fast", "they live in Africa")
    first = agent.run("tell me about zebras")
    assert first.returncode == 0, first.stderr
    (session_id,) = pg_sessions(pg_database)

    listed = agent.run("--sessions")
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.startswith(session_id[:8]) and "tell me about zebras" in listed.stdout
    (row,) = [json.loads(line) for line in agent.run("--sessions", "--json").stdout.splitlines()]
    assert row["id"] == session_id and row["first_prompt"] == "tell me about zebras"

    found = agent.run("--search", "stripes")
    assert found.returncode == 0, found.stderr
    assert found.stdout.startswith(session_id[:8]) and "assistant" in found.stdout
    assert "[stripes]" in found.stdout
    hits = [
        json.loads(line) for line in agent.run("--search", "zebra", "--json").stdout.splitlines()
    ]
    assert {h["session_id"] for h in hits} == {session_id} and len(hits) == 2

    second = agent.run("--continue", "how fast?")
    assert second.returncode == 0, second.stderr
    assert agent.user_texts(1) == ["tell me about zebras", "how fast?"]  # the same session

    third = agent.run("-i", "--continue", stdin="where do they live?\n")
    assert third.returncode == 0, third.stderr
    assert "they live in Africa" in third.stdout
    assert agent.user_texts(2) == ["tell me about zebras", "how fast?", "where do they live?"]
    assert pg_sessions(pg_database) == [session_id]  # continued, never a new session

    agent.reply("by id")
    again = agent.run("--session", session_id[:8], "and by id?")
    assert again.returncode == 0, again.stderr
    assert agent.user_texts(3)[-2:] == ["where do they live?", "and by id?"]
    assert pg_sessions(pg_database) == [session_id]

    repl = agent.run("-i", "--continue", stdin="/sessions\n/fork\n")  # the REPL's own
    assert repl.returncode == 0, repl.stderr
    assert session_id[:8] in repl.stdout and "tell me about zebras" in repl.stdout
    assert f"forked {session_id[:8]} -> new session" in repl.stdout
    assert len(agent.server.requests) == 4  # no model call
    assert len(pg_sessions(pg_database)) == 2


def test_a_paused_postgres_run_is_continued_with_the_hint_it_prints(
    tmp_path: Path, pg_database: str
) -> None:
    spec = SPEC + "tools:\n  - external: {name: approve, description: Ask a human.}\n"
    module = compiled(tmp_path, spec)
    work = tmp_path / "work"
    work.mkdir()
    from harnessc.testing import openai_tool_call_events

    with ProtocolServer() as server:
        env = _agent_env(server, pg_database, tmp_path)
        agent = PgAgent(module, work, env, server)
        server.enqueue(ScriptedResponse.sse(openai_tool_call_events([("call_1", "approve", "{}")])))
        agent.reply("approved, done")
        paused = agent.run("deploy it")
        assert paused.returncode == 3, paused.stderr
        assert "in memory only" not in paused.stderr
        (session_id,) = pg_sessions(pg_database)
        assert f"--session {session_id}" in paused.stderr
        resumed = agent.run("--session", session_id, "--resume-with", '{"call_1": "yes"}')
        assert resumed.returncode == 0, resumed.stderr
        assert resumed.stdout.strip() == "approved, done"


def test_a_run_that_never_started_leaves_no_postgres_session(
    tmp_path: Path, pg_database: str
) -> None:
    module = compiled(tmp_path, SPEC)
    work = tmp_path / "work"
    work.mkdir()
    with ProtocolServer() as server:
        server.enqueue(ScriptedResponse.json_body(401, {"error": {"message": "bad key"}}))
        env = _agent_env(server, pg_database, tmp_path)
        agent = PgAgent(module, work, env, server)
        failed = agent.run("hi")
        assert failed.returncode == 1
        assert agent.run("/status").returncode == 2  # a /command answered: nothing to keep
        assert pg_sessions(pg_database) == []
