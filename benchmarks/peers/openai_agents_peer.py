"""The add agent on the OpenAI Agents SDK (run by benchmarks/peers.py in its own venv).

Usage: python openai_agents_peer.py PROMPT; BENCH_BASE_URL names the server.
"""

from __future__ import annotations

import os
import sys

from add_tools import add
from openai import AsyncOpenAI

from agents import (
    Agent,
    OpenAIChatCompletionsModel,
    Runner,
    function_tool,
    set_tracing_disabled,
)


def main() -> int:
    set_tracing_disabled(True)  # tracing would export to the vendor's servers
    client = AsyncOpenAI(
        base_url=os.environ["BENCH_BASE_URL"], api_key=os.environ["OPENAI_API_KEY"]
    )
    agent = Agent(
        name="adder",
        instructions="You add numbers with the add tool.",
        model=OpenAIChatCompletionsModel(model="bench-model", openai_client=client),
        tools=[function_tool(add)],
    )
    result = Runner.run_sync(agent, sys.argv[1], max_turns=1000)
    print(result.final_output)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
