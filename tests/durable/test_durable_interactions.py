"""The interaction property test's durable dimension: a durable run mixing a local tool,
an MCP server's tool (a real stdio SDK server), an external tool, a hand-over to a
sub-agent (which runs the local and the MCP tool), a permission ask (asked inside the
sub-agent too) and the sub-agents' caps (one hand-over at a time, and a turn limit of
the sub-agent's own that pauses the run until a raise) has its worker SIGKILLed at a drawn step and recovered by a restarted worker, on SQLite and
on PostgreSQL. Every side effect happens exactly once, every answer is honoured once,
and the sessions (the run's and its sub-agents') equal those of the same run that was
never interrupted. (A worker
stalled past its lease is ``test_durable_meets``'s SIGSTOP test.)

``HARNESSC_DURABLE_EXAMPLES=50 python3 -m pytest tests/durable/test_durable_interactions*.py``
draws more runs (CI draws a few on each database). The PostgreSQL runs are
test_durable_interactions_postgresql.py: a file of their own, so pytest-xdist
(``--dist loadfile``) runs them beside these on the other worker."""

from __future__ import annotations

import os
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from harnessc.testing import RecordedRequest, ScriptedResponse
from tests.timing import scaled

from .durakit import DurableAgent, make_agent
from .test_durable_runs import Server, sessions_of, submit
from .test_durable_subagents import tree_shape

pytest.importorskip("dbos", reason="durable runs need dbos (pip install -e '.[dev]')")
pytest.importorskip("mcp", reason="the MCP tool needs the SDK (pip install -e '.[dev]')")

HERE = Path(__file__).resolve().parent
# One drawn scenario per backend beside the two written-out examples (a sub-agent killed
# mid-call; caps and a sub-agent's own limit): HARNESSC_DURABLE_EXAMPLES=20 explores more.
EXAMPLES = int(os.environ.get("HARNESSC_DURABLE_EXAMPLES", "1"))
SQLITE = "sqlite:///.harnessc/durable.sqlite"


def _agent(folder: Path, server: Server, url: str, *, ask: bool, capped: bool) -> DurableAgent:
    agent = make_agent(folder, server.running, url)
    agent.env.update(
        TICKETS_SERVER=str(HERE / "tickets_server.py"),
        TICKETS_LOG=str(folder / "tickets.log"),
        SUBAGENT="1",
    )
    if ask:
        agent.env["ASK_TOOLS"] = "work"
    if capped:
        agent.env.update(SUBAGENT_TURNS="1", SUBAGENT_PARALLEL="1")
    return agent


def _effects(agent: DurableAgent, folder: Path) -> Counter[str]:
    """Each side effect: a finished ``work`` call, a ticket the MCP server created."""
    found: Counter[str] = Counter(agent.executions())
    log = folder / "tickets.log"
    if log.exists():
        found.update(f"ticket {line.split()[1]}" for line in log.read_text().splitlines())
    return found


def _recorded_tools(runs: Any, run_id: str) -> int:
    """How many tool executions the run has recorded as steps."""
    steps = runs.client.list_workflow_steps(run_id, load_output=False) or []
    return sum(
        1
        for step in steps
        if str(step["function_name"]).startswith("tool:") and step["completed_at_epoch_ms"]
    )


class Gate:
    """Holds the model requests of a run the test is to kill, one at a time, until the
    driver lets each through: while a request is held the worker waits for its model
    and runs no tool, so a kill there lands between two tool steps (never inside one)."""

    def __init__(self, server: Server) -> None:
        self._server = server
        self._changed = threading.Condition()
        self._held = 0  # requests waiting at the gate
        self._passes = 0  # requests let through and not yet taken
        self._open = False

    def __enter__(self) -> Gate:
        self._server.running.set_handler(self._answer)
        return self

    def __exit__(self, *exc: object) -> None:
        self.open()
        self._server.running.set_handler(self._server.answer)

    def _answer(self, request: RecordedRequest) -> ScriptedResponse:
        with self._changed:
            self._held += 1
            self._changed.notify_all()
            while not (self._open or self._passes):
                self._changed.wait()
            if not self._open:
                self._passes -= 1
            self._held -= 1
        return self._server.answer(request)

    def wait_held(self, timeout: float) -> bool:
        """Whether a request waits at the gate (waiting up to ``timeout`` for one)."""
        with self._changed:
            return self._changed.wait_for(lambda: self._held > self._passes, timeout)

    def let_one_through(self) -> None:
        with self._changed:
            self._passes += 1
            self._changed.notify_all()

    def open(self) -> None:
        with self._changed:
            self._open = True
            self._changed.notify_all()


def _drive(
    agent: DurableAgent, folder: Path, prompt: str, kill_after: int | None, gate: Gate
) -> list[str]:
    """Run ``prompt`` on a worker to its end, answering every pull point once; with
    ``kill_after``, SIGKILL the worker once the run recorded that many tool steps (or
    waits), and start it again. The kill lands while the worker waits for its model
    (``gate``) or at a pull point, never inside a tool: a kill inside a tool's execution,
    before its result is recorded, gives the model an "interrupted" result instead of
    running the tool again (docs/durable.md), which ``test_durable_interrupted`` tests.
    Returns the answers given, in order."""
    from harnessc.runtime.durable import DurableConfig, DurableRuns

    run_id = submit(agent, prompt)
    worker = agent.worker("w1")
    answers: list[str] = []
    raised: dict[str, Any] = {}
    config = DurableConfig(database_url=agent.env["DURABLE_URL"], queue="dtest")
    deadline = time.monotonic() + scaled(240)
    if kill_after is None:
        gate.open()
    with DurableRuns(config, str(agent.workdir)) as runs:
        while True:
            assert time.monotonic() < deadline, f"the run never ended: {runs.state(run_id)}"
            held = kill_after is not None and gate.wait_held(0.1)
            state = runs.state(run_id)
            kind = state.get("state")
            waiting = kind in ("awaiting_tool", "paused")
            if held and not waiting and _recorded_tools(runs, run_id) < (kill_after or 0):
                gate.let_one_through()
                continue
            if kill_after is not None and (held or waiting):
                worker.kill()
                worker.wait(timeout=30)
                gate.open()  # the killed worker's request is answered to no one
                worker = agent.worker("w1")  # the same id: recovers the run at once
                kill_after = None
                continue
            if kind == "done":
                return answers
            assert kind not in ("failed", "cancelled"), state
            shown = runs.waiting(run_id) if waiting else {}
            if shown.get("pause", {}).get("kind") == "budget":
                if shown != raised:  # answered once: the next pause is another state event
                    runs.resume_with(run_id, {"budget": {"turns": 50}})  # a sub-agent's limit
                    answers.append("budget")
                    raised = shown
                time.sleep(0.1)
                continue
            if waiting:
                calls = [str(c["id"]) for c in runs.waiting(run_id).get("calls", [])]
                if not calls or set(calls) <= set(answers):  # being recorded, or taken
                    time.sleep(0.1)
                    continue
                if kind == "awaiting_tool":
                    runs.resume_with(run_id, {c: f"answer {c}" for c in calls})
                else:
                    runs.resume_with(run_id, {"approve": calls})
                answers += calls
                time.sleep(0.3)  # the worker takes the answer
            time.sleep(0.1)


def _check(
    scenario: tuple[list[str], bool, int, bool], urls: tuple[str, str], root: Path, server: Server
) -> None:
    """The run without and with the kill, each on its own database (``urls``)."""
    plan, ask, kill_after, capped = scenario
    tag = "x"
    prompt = f"mix {','.join(plan)} {tag}"
    outcomes: list[tuple[Counter[str], list[str], list[Any]]] = []
    for kill, url in zip((None, kill_after), urls, strict=True):
        folder = Path(tempfile.mkdtemp(dir=root))
        agent = _agent(folder, server, url, ask=ask, capped=capped)
        try:
            with Gate(server) as gate:
                answers = _drive(agent, folder, prompt, kill, gate)
        finally:
            agent.stop_workers()
        (session,) = sessions_of(agent)
        children = sorted(session.with_suffix("").glob("*.jsonl"))  # the sub-agents'
        shapes = [tree_shape(p) for p in (session, *children)]
        outcomes.append((_effects(agent, folder), answers, shapes))
    (plain, plain_answers, plain_session), (killed, killed_answers, killed_session) = outcomes
    expected = Counter(
        f"call_{tag}_{n}" if kind == "w" else f"ticket {tag}{n}"
        for n, kind in enumerate(plan)
        if kind in "wm"
    )
    for n, kind in enumerate(plan):  # a hand-over: the sub-agent's work and ticket
        if kind == "s":
            expected.update([f"call_{tag}s{n}_0", f"ticket {tag}s{n}1"])
    assert plain == expected
    assert killed == expected, "every side effect exactly once, across the kill"
    assert sorted(killed_answers) == sorted(plain_answers), "every answer given once"
    assert killed_session == plain_session, "the session as if nothing had happened"
    if capped and "s" in plan:  # each hand-over stopped at its own turn limit, once raised
        assert "budget" in plain_answers


scenarios = st.lists(st.sampled_from("wmas"), min_size=2, max_size=4).flatmap(
    lambda plan: st.tuples(st.just(plan), st.booleans(), st.integers(0, len(plan)), st.booleans())
)
_SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@pytest.fixture(scope="module")
def server() -> Any:
    from harnessc.testing import ProtocolServer

    with ProtocolServer() as running:
        yield Server(running)


# always drawn: a hand-over whose sub-agent is asked for its tool, killed inside it
SUBAGENT_EXAMPLE = (["s", "m"], True, 1, False)
# always drawn: two hand-overs one at a time, each paused by its own turn limit, killed
CAPPED_EXAMPLE = (["s", "s"], False, 1, True)


@_SETTINGS
@given(scenario=scenarios)
@example(scenario=SUBAGENT_EXAMPLE)
@example(scenario=CAPPED_EXAMPLE)
def test_a_killed_worker_changes_nothing_on_sqlite(
    scenario: tuple[list[str], bool, int, bool], tmp_path: Path, server: Server
) -> None:
    _check(scenario, (SQLITE, SQLITE), tmp_path, server)  # a file in each run's folder
