"""One case in its own process: ``python -m harnessc.agenttests.child`` reads the job
(JSON on stdin), runs in the case's workspace (its working directory) and prints the
outcome (JSON on stdout).

The agent is the compiled module of the spec; its session is kept in memory, its model
replies come from the cassette (or, recording, from the real models, and are written
into it; ``base_url`` points every model of the tree at one server, as ``--base-url`` does
for a run). Pauses are answered as the case says: external tools by ``answers``,
permission asks by ``approvals``; a pause the case does not answer ends the run there.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import sys
from pathlib import Path
from typing import Any

from harnessc.agenttests.cassette import Cassette, CassetteProvider
from harnessc.runtime.core.messages import AssistantMessage, Message

__all__ = ["run_job"]

_MAX_PAUSES = 20


def _load_module(path: str) -> Any:
    spec = importlib.util.spec_from_file_location(Path(path).stem, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _answer(value: Any) -> Any:
    return value if isinstance(value, str | dict) else json.dumps(value)


async def run_job(job: dict[str, Any]) -> dict[str, Any]:
    """Run the case ``job`` describes; its outcome."""
    from harnessc.runtime import AgentHarness
    from harnessc.runtime.session import Session

    workspace = os.getcwd()
    module = _load_module(job["module"])
    cassette_path = Path(job["cassette"])
    live = None
    if job.get("record"):
        from harnessc.runtime.providers.pool import ProviderPool

        pool = ProviderPool(None)

        class _Live(dict[str, Any]):
            def __missing__(self, api: str) -> Any:
                provider = pool.get(api)
                self[api] = provider
                return provider

        live = _Live()
        cassette = Cassette()
    else:
        try:
            cassette = Cassette.read(cassette_path)
        except FileNotFoundError:
            return {"error": f"no cassette {cassette_path}: record it with --record"}
        except (OSError, ValueError) as exc:
            return {"error": f"cannot read the cassette: {exc}"}
    provider = CassetteProvider(cassette, workspace, live=live, source=str(cassette_path))
    options = module.build_options(session=Session())
    base_url = job.get("base_url")
    if live is not None and base_url:
        from harnessc.runtime.runs.overrides import override_tree_base_url

        override_tree_base_url(options, base_url[0], base_url[1])
    options.provider = provider
    harness = AgentHarness(options)
    messages: list[Message] = []
    answers: dict[str, Any] = job.get("answers") or {}
    approvals: dict[str, str] = job.get("approvals") or {}
    unanswered: str | None = None
    result = await harness.prompt(job["prompt"])
    messages.extend(result.messages)
    for _ in range(_MAX_PAUSES):
        pending = result.pending_tool_calls
        if result.status == "awaiting_tool":
            missing = [c.name for c in pending if c.name not in answers]
            if missing:
                unanswered = f"the run waits for {', '.join(missing)}: give answers for it"
                break
            result = await harness.resume({c.id: _answer(answers[c.name]) for c in pending})
        elif (
            result.status == "paused" and pending and result.reason.startswith("permission needed")
        ):
            missing = [c.name for c in pending if c.name not in approvals]
            if missing:
                unanswered = f"the run asks to run {', '.join(missing)}: give approvals for it"
                break
            decided = {c.id: approvals[c.name] == "allow" for c in pending}
            result = await harness.resume(approvals=decided)
        else:
            break
        messages.extend(result.messages)
    config = options.output
    replies = [m for m in messages if isinstance(m, AssistantMessage)]
    # a failed model request is not recorded: the cassette keeps its last good recording
    recorded = bool(job.get("record")) and not any(m.stop_reason == "error" for m in replies)
    if recorded:
        provider.recorded.write(cassette_path, agent=job["agent"], case=job["case"])
    return {
        "status": result.status,
        "reason": result.reason,
        "output": config.to_json(result.output) if config is not None else None,
        "typed": config is not None,
        "final_text": replies[-1].text if replies else "",
        "tools_called": [c.name for m in replies for c in m.tool_calls],
        "turns": len(replies),
        "tokens": sum((m.usage.input + m.usage.output for m in replies), 0),
        "stale": provider.stale,
        "unanswered": unanswered,
        "recorded": recorded,
    }


def main() -> int:
    job = json.loads(sys.stdin.read())
    try:
        outcome = asyncio.run(run_job(job))
    except Exception as exc:  # the case fails with the reason, the other cases go on
        outcome = {"error": f"{type(exc).__name__}: {exc}"}
    sys.stdout.write(json.dumps(outcome, ensure_ascii=False, default=str) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
