"""``DurableRuns.look`` reads a run's wait once: the state it reports and the calls it
waits for come from the same read, even when the run begins to wait between two reads."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from harnessc.runtime.durable.clients import DurableRuns
from harnessc.runtime.durable.config import DurableConfig

WAIT = {"state": "awaiting_tool", "reason": "awaiting_tool", "calls": [{"id": "c1"}]}


class _BeginsToWait:
    """The DBOS client's reads of one pending run that starts waiting after the first
    read of its ``state`` event (the moment a real worker can choose)."""

    def __init__(self) -> None:
        self.reads = 0

    def list_workflows(self, **_: Any) -> list[Any]:
        status = SimpleNamespace(
            workflow_id="r1",
            name="harnessc_run",
            status="PENDING",
            executor_id="w1",
            queue_name="q",
            created_at=None,
            output=None,
        )
        return [status]

    def get_event(self, run_id: str, key: str, timeout_seconds: float = 0) -> Any:
        self.reads += 1
        return None if self.reads == 1 else WAIT

    def list_workflow_steps(self, run_id: str, offset: int = 0) -> list[Any]:
        return []


def test_a_look_reports_the_state_and_the_calls_of_one_read() -> None:
    runs = DurableRuns.__new__(DurableRuns)
    runs.config, runs.cwd, runs.client = DurableConfig(), "/", _BeginsToWait()
    look = runs.look("r1")
    waits = look.row["state"] == "awaiting_tool"
    assert waits == bool(look.waiting.get("calls")), (look.row, look.waiting)
