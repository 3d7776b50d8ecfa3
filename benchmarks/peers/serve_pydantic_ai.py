"""The add agent served by pydantic-ai over AG-UI (benchmarks/serve_peers.py, peers venv).

pydantic-ai's documented way to serve an agent over AG-UI: a Starlette route handing
each request to ``AGUIAdapter.dispatch_request``, under uvicorn with its defaults.

Usage: python serve_pydantic_ai.py --port PORT; BENCH_BASE_URL names the model server.
"""

from __future__ import annotations

import argparse
import os

import uvicorn
from add_tools import add
from pydantic_ai import Agent
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider
from pydantic_ai.ui.ag_ui import AGUIAdapter
from pydantic_ai.usage import UsageLimits
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

provider = OpenAIProvider(
    base_url=os.environ["BENCH_BASE_URL"], api_key=os.environ["OPENAI_API_KEY"]
)
agent = Agent(
    OpenAIChatModel("bench-model", provider=provider),
    instructions="You add numbers with the add tool.",
    tools=[add],
)


async def run_agent(request: Request) -> Response:
    return await AGUIAdapter.dispatch_request(
        request, agent=agent, usage_limits=UsageLimits(request_limit=None)
    )


app = Starlette(routes=[Route("/", run_agent, methods=["POST"])])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning", backlog=4096)


if __name__ == "__main__":
    main()
