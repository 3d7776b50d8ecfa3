"""Test helper process: one agent run whose third tool call SIGKILLs the process."""

from __future__ import annotations

import asyncio
import os
import signal
import sys

from harnessc.runtime import AgentHarness, AgentHarnessOptions, Model
from harnessc.runtime.session import JsonlSessionRepo
from harnessc.runtime.tools import python_tool


def step(n: int) -> str:
    """Do step n.

    Args:
        n: The step's number.
    """
    with open(os.environ["RAN_FILE"], "a") as ran:
        ran.write(f"{n}\n")
    if n == 2:  # the process dies while this tool runs
        os.kill(os.getpid(), signal.SIGKILL)
    return f"step {n} done"


async def main() -> None:
    root, url = sys.argv[1], sys.argv[2]
    session = JsonlSessionRepo(root).create(cwd=root)
    print(session.path, flush=True)
    options = AgentHarnessOptions(
        session=session,
        models={"main": Model(id="m", api="openai-completions", provider="openai", base_url=url)},
        model="main",
        tools=[python_tool(step)],
        system_prompt="You do steps.",
    )
    await AgentHarness(options).prompt("Do the steps.")


if __name__ == "__main__":
    asyncio.run(main())
