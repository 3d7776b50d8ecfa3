"""The durable verbs of a generated agent's command line (a spec with ``durable:``).

``--submit PROMPT`` enqueues a run and prints its id; ``--worker`` takes runs from the
queue until SIGTERM or Ctrl-C (then drains); ``--follow RUN`` streams a run's events;
``--runs`` lists runs with their state; ``--run RUN --resume-with JSON`` answers a run's
pull point from any process. ``--submit``, ``--follow``, ``--runs`` and ``--resume-with``
are clients: they never start an executor. A plain one-shot run (``PROMPT`` alone, or
with ``--json``) runs in this process as a durable workflow; every other invocation is
the ordinary command line (``run_cli``), not durable.
"""

from __future__ import annotations

import argparse
import io
import os
import signal
import sys
import threading
import uuid
from collections.abc import Callable, Sequence
from typing import Any, TextIO

from harnessc.runtime.cli.args import EXIT_DONE, EXIT_ERROR, EXIT_PAUSED, EXIT_USAGE
from harnessc.runtime.durable import clients
from harnessc.runtime.durable.config import DurableConfig, DurableError, default_worker_id

__all__ = ["run_durable_cli"]

_DRAIN_S = 30.0
_VERBS = ("submit", "worker", "follow", "runs", "run")


def _parser(prog: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=prog, add_help=False)
    p.add_argument("--submit", metavar="PROMPT")
    p.add_argument("--worker", action="store_true")
    p.add_argument("--worker-id", metavar="NAME")
    p.add_argument("--concurrency", type=int, metavar="N")
    p.add_argument("--follow", metavar="RUN_ID")
    p.add_argument("--runs", action="store_true")
    p.add_argument("--run", metavar="RUN_ID")
    p.add_argument("--resume-with", metavar="JSON")
    p.add_argument("--json", action="store_true")
    p.add_argument("--cwd", metavar="DIR")
    p.add_argument("--drain-s", type=float, default=_DRAIN_S)
    return p


_GROUP = """\
runs are durable (DBOS): a PROMPT alone (optionally --json) runs here as a durable
workflow; these verbs share the queue with every worker of this agent. --submit,
--follow, --runs and --run/--resume-with are clients: they never execute a run"""


def help_parser(prog: str, agent_name: str) -> argparse.ArgumentParser:
    """The ordinary command line's parser with the durable verbs: for --help and
    --completion only (the verbs are parsed by ``_parser``)."""
    from harnessc.runtime.cli.args import build_parser

    parser = build_parser(prog, agent_name)
    group = parser.add_argument_group("durable runs", _GROUP)
    group.add_argument("--submit", metavar="PROMPT", help="enqueue a run; prints its id")
    group.add_argument(
        "--worker",
        action="store_true",
        help="take runs from the queue until SIGTERM or Ctrl-C (then drain)",
    )
    group.add_argument(
        "--concurrency", metavar="N", type=int, help="runs a --worker executes at once"
    )
    group.add_argument(
        "--worker-id",
        metavar="NAME",
        help=f"this worker's stable id (default: the host name, {default_worker_id()})",
    )
    group.add_argument(
        "--drain-s",
        metavar="S",
        type=float,
        help=f"seconds running runs get to finish on SIGTERM (default {_DRAIN_S:g})",
    )
    group.add_argument(
        "--follow", metavar="RUN_ID", help="print a run's events (--json: as JSON) until it ends"
    )
    group.add_argument(
        "--runs", action="store_true", help="list runs with their state (--json: one per line)"
    )
    group.add_argument(
        "--run",
        metavar="RUN_ID",
        help="with --resume-with JSON: answer a durable run's pull point from any process",
    )
    return parser


def _help_or_completion(rest: list[str], agent_name: str, out: TextIO) -> int | None:
    """--help / --completion SHELL of the agent with its durable verbs, else None."""
    from harnessc.runtime.cli.args import completion_script, program_name

    words = rest[: rest.index("--")] if "--" in rest else rest
    prog = program_name()
    if "-h" in words or "--help" in words:
        out.write(help_parser(prog, agent_name).format_help())
        return EXIT_DONE
    shells = [w.split("=", 1)[1] for w in words if w.startswith("--completion=")]
    shells += [words[i + 1] for i, w in enumerate(words[:-1]) if w == "--completion"]
    if shells and shells[0] in ("bash", "zsh"):
        out.write(completion_script(help_parser(prog, agent_name), prog, shells[0]))
        return EXIT_DONE
    return None


def run_durable_cli(
    build_options: Callable[..., Any],
    argv: Sequence[str] | None = None,
    *,
    agent_name: str,
    session_dir: Any = None,
    durable: Callable[[], DurableConfig],
    session_repo: Callable[[], Any] | None = None,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
) -> int:
    """The agent's command line with the durable verbs (see the module docstring)."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    out, err = stdout or sys.stdout, stderr or sys.stderr
    known, rest = _parser(agent_name).parse_known_args(args_list)
    verbs = [v for v in _VERBS if getattr(known, v)]
    prompt = _one_shot_prompt(rest) if not verbs and known.resume_with is None else None
    if not verbs and prompt is None:
        shown = _help_or_completion(rest, agent_name, out)
        if shown is not None:
            return shown
        from harnessc.runtime import run_cli

        return int(
            run_cli(
                build_options,
                args_list,
                agent_name=agent_name,
                session_dir=session_dir,
                session_repo=session_repo,
            )
        )
    from harnessc.runtime.durable.workflow import DurableAgent

    agent = DurableAgent(
        build_options,
        agent_name,
        str(session_dir) if session_dir is not None else None,
        session_repo,
    )
    cwd = os.path.abspath(known.cwd or os.getcwd())
    try:
        config = durable()
        if len(verbs) > 1 or (verbs and rest):
            raise DurableError(
                f"unexpected arguments with --{verbs[0]}: {' '.join(rest) or verbs[1:]}"
            )
        if known.worker:
            return _worker(config, agent, known, cwd, err)
        if known.submit is not None:
            return clients.submit(config, known.submit, cwd, out)
        if known.follow:
            return clients.follow(config, known.follow, cwd, out, as_json=known.json)
        if known.runs:
            return clients.list_runs(config, cwd, out, as_json=known.json)
        if known.run:
            if known.resume_with is None:
                raise DurableError("--run RUN_ID needs --resume-with JSON")
            return clients.resume(config, known.run, known.resume_with, cwd, out)
        if known.resume_with is not None:
            raise DurableError("--resume-with of a durable run needs --run RUN_ID")
        assert prompt is not None
        return _one_shot(config, agent, prompt, cwd, out, err, as_json=known.json)
    except DurableError as exc:
        err.write(f"{agent_name}: {exc}\n")
        return EXIT_USAGE
    except Exception as exc:  # the database (DBOS, SQLAlchemy, psycopg): one clear line
        if os.environ.get("HARNESSC_DEBUG"):
            raise
        err.write(f"{agent_name}: durable runs: {type(exc).__name__}: {_first_line(exc)}\n")
        return EXIT_ERROR
    except KeyError as exc:  # env(): a variable the spec needs is unset
        err.write(f"{agent_name}: {exc.args[0] if exc.args else exc}\n")
        return EXIT_USAGE


def _first_line(exc: BaseException) -> str:
    from harnessc.runtime.session.postgres_storage import redact_url

    text = str(exc).strip().splitlines()
    return redact_url(text[0]) if text else ""


def _one_shot_prompt(rest: list[str]) -> str | None:
    return rest[0] if len(rest) == 1 and not rest[0].startswith("-") else None


def _worker(
    config: DurableConfig, agent: Any, known: argparse.Namespace, cwd: str, err: TextIO
) -> int:
    from harnessc.runtime.durable.engine import Heartbeat, launch_executor, shutdown

    worker_id = known.worker_id or default_worker_id()
    concurrency = known.concurrency or config.concurrency
    if concurrency < 1:
        raise DurableError("--concurrency must be at least 1")
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    url = launch_executor(
        config, agent, cwd=cwd, executor_id=worker_id, concurrency=concurrency, listen=True
    )
    heartbeat = Heartbeat(url, worker_id, config.queue, config.lease_s)
    heartbeat.start()
    err.write(
        f"worker {worker_id}: taking runs from queue {config.queue} ({concurrency} at once)\n"
    )
    err.flush()
    stop.wait()
    err.write(f"worker {worker_id}: stopping (runs get {known.drain_s:g} s to finish)\n")
    heartbeat.stop()
    shutdown(known.drain_s)
    return EXIT_DONE


def _one_shot(
    config: DurableConfig,
    agent: Any,
    prompt: str,
    cwd: str,
    out: TextIO,
    err: TextIO,
    *,
    as_json: bool,
) -> int:
    """Run one prompt here as a durable workflow (no queue: this process runs it)."""
    from harnessc.runtime.durable.engine import Heartbeat, launch_executor, shutdown

    worker_id = f"{default_worker_id()}-run-{os.getpid()}"
    url = launch_executor(
        config, agent, cwd=cwd, executor_id=worker_id, concurrency=1, listen=False
    )
    # a row with one beat: should this process stop at a pull point (or die), the run is
    # another worker's to continue once the lease has passed
    Heartbeat(url, worker_id, config.queue, config.lease_s).beat()
    try:
        from dbos import DBOS, SetWorkflowID

        from harnessc.runtime.durable.steps import output_events
        from harnessc.runtime.durable.workflow import durable_run

        run_id = str(uuid.uuid4())
        err.write(f"run {run_id}\n")
        err.flush()
        with SetWorkflowID(run_id):
            handle = DBOS.start_workflow(durable_run, {"prompt": prompt, "cwd": cwd})
        clients.pump(
            lambda seen: DBOS.list_workflow_steps(run_id, offset=seen),
            lambda: handle.get_status().status,
            lambda: _waits(run_id),
            lambda: output_events(handle.get_result()),
            out if as_json else io.StringIO(),
            as_json=as_json,
        )
        if handle.get_status().status in ("PENDING", "ENQUEUED"):
            err.write(
                f"run {run_id} waits at a pull point: answer it with "
                f"--run {run_id} --resume-with JSON (a worker continues it)\n"
            )
            return EXIT_PAUSED
        outcome: dict[str, Any] = handle.get_result()  # type: ignore[assignment]
        if not as_json:
            out.write(str(outcome.get("text", "")) + "\n")
        return EXIT_DONE if outcome.get("status") == "done" else EXIT_ERROR
    finally:
        shutdown(0)


def _waits(run_id: str) -> bool:
    from dbos import DBOS

    from harnessc.runtime.durable.workflow import STATE_EVENT

    state = DBOS.get_event(run_id, STATE_EVENT, timeout_seconds=0)
    return isinstance(state, dict) and state.get("state") in ("awaiting_tool", "paused")
