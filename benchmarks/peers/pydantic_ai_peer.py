"""The add agent on pydantic-ai (run by benchmarks/peers.py in its own venv).

Usage: python pydantic_ai_peer.py PROMPT; BENCH_BASE_URL names the server.
"""

from __future__ import annotations

import os
import sys

from add_tools import add
from pydantic_ai import Agent
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider
from pydantic_ai.usage import UsageLimits


def main() -> int:
    provider = OpenAIProvider(
        base_url=os.environ["BENCH_BASE_URL"], api_key=os.environ["OPENAI_API_KEY"]
    )
    agent = Agent(
        OpenAIChatModel("bench-model", provider=provider),
        instructions="You add numbers with the add tool.",
        tools=[add],
    )
    result = agent.run_sync(sys.argv[1], usage_limits=UsageLimits(request_limit=None))
    print(result.output)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
