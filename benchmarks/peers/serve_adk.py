"""The add agent on Google ADK, served over AG-UI by ag-ui-adk (benchmarks/serve_peers.py,
peers venv).

An ``LlmAgent`` on ADK's own Gemini model class, its client pointed at the scripted
model (``BENCH_MODEL_URL``, which answers Gemini's streamGenerateContent), wrapped in
ag-ui-adk's ``ADKAgent`` (in-memory session, artifact and memory services) and its
FastAPI endpoint, under uvicorn with its defaults. ``--max-runs`` is ag-ui-adk's
``max_concurrent_executions`` (its default is 10), set like harnessc's ``--max-runs``.

Usage: python serve_adk.py --port PORT [--max-runs N]
"""

from __future__ import annotations

import argparse
import os

import uvicorn
from add_tools import add
from ag_ui_adk import ADKAgent, add_adk_fastapi_endpoint
from fastapi import FastAPI
from google.adk.agents import LlmAgent
from google.adk.models import Gemini


def build_app(max_runs: int) -> FastAPI:
    agent = LlmAgent(
        name="adder",
        model=Gemini(model="gemini-2.5-flash", base_url=os.environ["BENCH_MODEL_URL"]),
        instruction="You add numbers with the add tool.",
        tools=[add],
    )
    served = ADKAgent(
        adk_agent=agent,
        app_name="bench",
        user_id="bench",
        use_in_memory_services=True,
        max_concurrent_executions=max_runs,
    )
    app = FastAPI()
    add_adk_fastapi_endpoint(app, served, path="/agui")
    return app


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--max-runs", type=int, default=10)
    args = parser.parse_args()
    uvicorn.run(
        build_app(args.max_runs),
        host="127.0.0.1",
        port=args.port,
        log_level="warning",
        backlog=4096,
    )


if __name__ == "__main__":
    main()
