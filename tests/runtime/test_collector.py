"""A process's first run freezes what start-up made out of the collector's scans (issue 47).

Each case runs in a fresh interpreter: a freeze is the whole process's, once.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

from harnessc.testing import ProtocolServer, ScriptedResponse
from harnessc.testing.streams import openai_events

# Builds a harness the way a user's program does (no recipe), runs two prompts on it
# and prints the collector's frozen count before the first run, after it and after the
# second; ``FREEZE_FIRST`` makes the program freeze objects itself beforehand.
PROGRAM = textwrap.dedent(
    """
    import asyncio, gc, json, os, sys
    from harnessc.runtime import AgentHarness, AgentHarnessOptions, Model
    from harnessc.runtime.session import Session

    if os.environ.get("FREEZE_FIRST"):
        gc.freeze()
    if os.environ.get("COLLECTOR_OFF"):
        gc.disable()
    model = Model(id="m", api="openai-completions", base_url=sys.argv[1])
    counts = []

    async def main():
        harness = AgentHarness(
            AgentHarnessOptions(session=Session(), models={"m": model}, model="m")
        )
        counts.append(gc.get_freeze_count())
        first = await harness.prompt("hi")
        counts.append(gc.get_freeze_count())
        kept = [[] for _ in range(1000)]  # tracked objects made between the runs
        second = await harness.prompt("again")
        counts.append(gc.get_freeze_count())
        await harness.close()
        return [first.text, second.text], len(kept)

    texts, _ = asyncio.run(main())
    print(json.dumps({"texts": texts, "frozen": counts, "enabled": gc.isenabled()}))
    """
)


def _run(**env: str) -> dict[str, object]:
    with ProtocolServer() as server:
        server.set_handler(lambda request: ScriptedResponse.sse(openai_events(["ok"])))
        environ = {k: v for k, v in os.environ.items() if k != "HARNESSC_GC_FREEZE"}
        environ.update(env, OPENAI_API_KEY="sk-test")
        done = subprocess.run(
            [sys.executable, "-c", PROGRAM, f"{server.url}/v1"],
            env=environ,
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert done.returncode == 0, done.stderr
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["texts"] == ["ok", "ok"]
    return result


def test_the_first_run_freezes_what_start_up_made_and_later_runs_freeze_nothing_more() -> None:
    before, after_first, after_second = _run()["frozen"]  # type: ignore[misc]
    assert before == 0
    assert after_first > 1000  # the imported modules' objects, the options, the harness
    assert after_second <= after_first  # the second run froze nothing more


def test_a_program_that_froze_objects_itself_keeps_its_own_policy() -> None:
    before, after_first, after_second = _run(FREEZE_FIRST="1")["frozen"]  # type: ignore[misc]
    assert before > 1000
    # Frozen objects are still freed by reference counting: the count may only fall.
    assert after_first <= before
    assert after_second <= before


def test_the_freeze_can_be_turned_off() -> None:
    assert _run(HARNESSC_GC_FREEZE="0")["frozen"] == [0, 0, 0]


def test_a_collector_turned_off_is_left_off_and_unfrozen() -> None:
    result = _run(COLLECTOR_OFF="1")
    assert result["frozen"] == [0, 0, 0]
    assert result["enabled"] is False
