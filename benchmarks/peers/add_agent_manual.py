"""Hand-written equivalent of ``harnessc build add_agent.yaml``.

benchmarks/peers.py runs it only when the compiler cannot build the spec; it wires the
spec the way the generated module does (build_options + run_cli).
"""

from __future__ import annotations

from pathlib import Path

from harnessc.runtime import AgentHarnessOptions, Model, env, run_cli
from harnessc.runtime.session import JsonlSessionRepo, Session
from harnessc.runtime.tools import import_object, python_tool

AGENT_NAME = "add_agent"
SPEC_DIR = Path(__file__).resolve().parent
SESSIONS_DIR = Path(".harnessc/sessions")
SYSTEM_PROMPT = "You add numbers with the add tool."


def build_options(*, session: Session | None = None, cwd: str | None = None) -> AgentHarnessOptions:
    if session is None:
        session = JsonlSessionRepo(SESSIONS_DIR).create(cwd=cwd, metadata={"agent": AGENT_NAME})
    return AgentHarnessOptions(
        session=session,
        models={
            "main": Model(
                id="bench-model",
                api="openai-completions",
                provider="openai",
                base_url=env("BENCH_BASE_URL"),
                api_key_env="OPENAI_API_KEY",
            ),
        },
        model="main",
        tools=[python_tool(import_object("add_tools:add", SPEC_DIR), read_only=True)],
        system_prompt=SYSTEM_PROMPT,
    )


def main(argv: list[str] | None = None) -> int:
    return run_cli(build_options, argv, agent_name=AGENT_NAME, session_dir=SESSIONS_DIR)


if __name__ == "__main__":
    raise SystemExit(main())
