"""Hand-written stand-in for ``harnessc build add_agent.yaml`` (used until the compiler lands).

Mirrors what the compiler emits for add_agent.yaml: ``build_options`` wiring the spec
field by field, and ``main`` handing over to ``run_cli``.
"""

from __future__ import annotations

import sys
from pathlib import Path

from harnessc.runtime import AgentHarnessOptions, Model, Session, env
from harnessc.runtime.tools import import_object, python_tool

HERE = Path(__file__).resolve().parent
SPEC_DIR = HERE
SESSIONS_DIR = SPEC_DIR / ".harnessc" / "sessions"
SYSTEM_PROMPT = "You add numbers with the add tool."


def build_options(*, session: Session | None = None, cwd: str | None = None) -> AgentHarnessOptions:
    if session is None:
        from harnessc.runtime.session.repo import JsonlSessionRepo

        session = JsonlSessionRepo(SESSIONS_DIR).create(cwd=cwd, metadata={"agent": "add_agent"})
    return AgentHarnessOptions(
        session=session,
        models={
            "main": Model(
                api="openai-completions",
                provider="openai",
                id="bench-model",
                base_url=env("BENCH_BASE_URL"),
                api_key_env="OPENAI_API_KEY",
            )
        },
        model="main",
        tools=[python_tool(import_object("add_tools:add", base_dir=SPEC_DIR))],
        system_prompt=SYSTEM_PROMPT,
    )


def _one_shot(argv: list[str]) -> int:
    """Until harnessc.runtime.cli lands: one run, the reply's text on stdout."""
    from harnessc.runtime import AgentHarness

    harness = AgentHarness(build_options())
    result = harness.prompt_sync(argv[0])
    print(result.text)
    return 0 if result.status == "done" else 1


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    try:
        from harnessc.runtime.cli import run_cli
    except ImportError:
        return _one_shot(args)
    return run_cli(build_options, args, agent_name="add_agent", session_dir=SESSIONS_DIR)


if __name__ == "__main__":
    raise SystemExit(main())
