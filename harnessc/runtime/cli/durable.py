"""The durable verbs of a generated agent's command line (a spec with ``durable:``): the
terminal's door to durable runs.

``--submit PROMPT`` enqueues a run and prints its id; ``--worker`` takes runs from the
queue until SIGTERM or Ctrl-C (then drains), with ``--serve`` while this process serves
the agent too; ``--follow RUN`` shows a run's events as a
plain run shows them; ``--runs`` lists runs with their state; ``--run RUN`` with
``--resume-with JSON``, ``--approve CALL`` / ``--deny CALL`` or ``--cancel`` answers or
ends a run from any process. ``--submit``, ``--follow``, ``--runs`` and ``--run`` are
clients: they never start an executor. A plain one-shot run (``PROMPT`` alone, with
``--json`` or ``--base-url``) runs in this process as a durable workflow, through the
run-control layer (``durable.control.DurableRunControl``) and shown as a plain one-shot
run is (its typed value on stdout); every other invocation is the ordinary command line
(``run_cli``), not durable.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from typing import Any, TextIO

from harnessc.runtime.cli import durable_show as show_verbs
from harnessc.runtime.cli.args import EXIT_DONE, EXIT_ERROR, EXIT_PAUSED, EXIT_USAGE, UsageError
from harnessc.runtime.cli.main import ServeDoor
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
    p.add_argument("--approve", metavar="CALL_ID", action="append", default=[])
    p.add_argument("--deny", metavar="CALL_ID", action="append", default=[])
    p.add_argument("--cancel", action="store_true")
    p.add_argument("--base-url", metavar="URL")
    p.add_argument("--sandbox", choices=("on", "auto", "off"))
    p.add_argument("--json", action="store_true")
    p.add_argument("--cwd", metavar="DIR")
    p.add_argument("--drain-s", type=float, default=_DRAIN_S)
    return p


_GROUP = """\
runs are durable (DBOS): a PROMPT alone (optionally --json, --base-url) runs here as a
durable workflow; these verbs share the queue with every worker of this agent. --submit,
--follow, --runs and --run are clients: they never execute a run"""


def help_parser(prog: str, agent_name: str) -> argparse.ArgumentParser:
    """The ordinary command line's parser with the durable verbs: for --help and
    --completion only (the verbs are parsed by ``_parser``)."""
    from harnessc.runtime.cli.parser import build_parser

    parser = build_parser(prog, agent_name)
    group = parser.add_argument_group("durable runs", _GROUP)
    group.add_argument("--submit", metavar="PROMPT", help="enqueue a run; prints its id")
    group.add_argument(
        "--worker",
        action="store_true",
        help="take runs from the queue until SIGTERM or Ctrl-C (then drain); "
        "--base-url as for a run; with --serve the server is a worker too",
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
        "--follow",
        metavar="RUN_ID",
        help="show a run's events (--json: as JSON) until it stops; RUN_ID or its first characters",
    )
    group.add_argument(
        "--runs",
        action="store_true",
        help="a table of runs: id, status, reason, age, worker (--json: one per line)",
    )
    group.add_argument(
        "--run",
        metavar="RUN_ID",
        help="with --resume-with JSON, --approve / --deny CALL_ID or --cancel: answer "
        "or end a durable run from any process",
    )
    group.add_argument(
        "--cancel", action="store_true", help="with --run: end a queued, running or paused run"
    )
    return parser


def _help_or_completion(
    rest: list[str], agent_name: str, out: TextIO, prog: str | None
) -> int | None:
    """--help / --completion SHELL of the agent with its durable verbs, else None."""
    from harnessc.runtime.cli.args import program_name
    from harnessc.runtime.cli.parser import completion_script

    words = rest[: rest.index("--")] if "--" in rest else rest
    prog = prog or program_name()
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
    prog: str | None = None,
    serve: ServeDoor | None = None,
) -> int:
    """The agent's command line with the durable verbs (see the module docstring);
    ``prog`` and ``serve`` as for ``run_cli``."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    out, err = stdout or sys.stdout, stderr or sys.stderr
    known, rest = _parser(agent_name).parse_known_args(args_list)
    verbs = [v for v in _VERBS if getattr(known, v)]
    serving = known.worker and "--serve" in rest  # a server that is a worker too
    answers = known.resume_with is not None or known.approve or known.deny or known.cancel
    prompt = _one_shot_prompt(rest) if not verbs and not answers else None
    if not verbs and prompt is None and not known.cancel:
        shown = _help_or_completion(rest, agent_name, out, prog)
        if shown is not None:
            return shown
        from harnessc.runtime.cli.main import run_cli

        return int(
            run_cli(
                build_options,
                args_list,
                agent_name=agent_name,
                session_dir=session_dir,
                session_repo=session_repo,
                prog=prog,
                serve=serve,
            )
        )
    from harnessc.runtime.cli.args import program_name
    from harnessc.runtime.durable.workflow import DurableAgent

    agent = DurableAgent(
        build_options,
        agent_name,
        session_dir,
        session_repo,
    )
    cwd = os.path.abspath(known.cwd or os.getcwd())
    prog = prog or program_name()
    try:
        config = durable()
        if len(verbs) > 1 or (verbs and rest and not serving):
            raise DurableError(
                f"unexpected arguments with --{verbs[0]}: {' '.join(rest) or verbs[1:]}"
            )
        if known.base_url is not None and not (known.worker or prompt is not None):
            raise DurableError("--base-url goes with a run: a PROMPT or --worker")
        if known.worker and serving:
            return _serve_and_work(config, agent, known, cwd, rest, err, prog, serve)
        if known.worker:
            return _worker(config, agent, known, cwd, err)
        if known.submit is not None:
            return show_verbs.submit(config, known.submit, cwd, out)
        if known.follow:
            return show_verbs.follow(
                config, known.follow, cwd, _source(agent, cwd), out, err, prog, as_json=known.json
            )
        if known.runs:
            return show_verbs.list_runs(config, cwd, out, as_json=known.json)
        if known.run:
            given = [known.resume_with is not None, bool(known.approve or known.deny), known.cancel]
            if sum(given) != 1:
                raise DurableError(
                    "--run RUN_ID takes one of --resume-with JSON, --approve / --deny "
                    "CALL_ID or --cancel"
                )
            return show_verbs.resume(
                config,
                known.run,
                cwd,
                out,
                payload=known.resume_with,
                approve=known.approve,
                deny=known.deny,
                cancel=known.cancel,
            )
        if answers:
            raise DurableError("--resume-with, --approve, --deny and --cancel need --run RUN_ID")
        assert prompt is not None
        return _one_shot(config, agent, prompt, cwd, out, err, known, prog)
    except (DurableError, UsageError) as exc:
        err.write(f"{prog}: error: {exc}\n")
        return EXIT_USAGE
    except BrokenPipeError:
        _quiet_stdout()  # a reader closed stdout (``--runs | head``): stop quietly
        return EXIT_DONE
    except KeyError as exc:  # env(): a variable the spec needs is unset
        err.write(f"{prog}: error: {exc.args[0] if exc.args else exc}\n")
        return EXIT_USAGE
    except Exception as exc:  # the database (DBOS, SQLAlchemy, psycopg): one clear line
        if os.environ.get("HARNESSC_DEBUG"):
            raise
        err.write(f"{prog}: durable runs: {type(exc).__name__}: {_first_line(exc)}\n")
        return EXIT_ERROR


def _quiet_stdout() -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


def _first_line(exc: BaseException) -> str:
    from harnessc.runtime.session.postgres_storage import redact_url

    text = str(exc).strip().splitlines()
    return redact_url(text[0]) if text else ""


def _one_shot_prompt(rest: list[str]) -> str | None:
    return rest[0] if len(rest) == 1 and not rest[0].startswith("-") else None


def _preflight(agent: Any, known: argparse.Namespace, cwd: str) -> Any:
    """What a plain run checks before it starts, for a process that executes runs: the
    agent builds, ``--base-url`` / ``$HARNESSC_BASE_URL`` (kept for every run this
    process executes), the model's API key. UsageError names the problem. The model."""
    from harnessc.runtime.runs.overrides import base_url_from, check_model, override_base_url
    from harnessc.runtime.session import Session

    agent.base_url = base_url_from(known.base_url)
    if known.sandbox:  # the operator's, for every run this process executes
        agent.sandbox = known.sandbox
    try:
        options = agent.build_options(session=Session(), cwd=cwd)
    except KeyError:
        raise
    except Exception as exc:
        raise UsageError(f"cannot build the agent: {type(exc).__name__}: {exc}") from None
    if agent.base_url is not None:
        override_base_url(options, *agent.base_url)
    if agent.sandbox is not None:
        from harnessc.runtime.runs.overrides import override_sandbox

        override_sandbox(options, agent.sandbox)
    from harnessc.runtime.sandbox.spawn import SandboxUnavailable, require

    try:  # a worker that could not run a required sandbox takes no run
        require(options.sandbox)
    except SandboxUnavailable as exc:
        raise UsageError(str(exc)) from None
    model = options.model
    if isinstance(model, str) or model is None:
        key = model if isinstance(model, str) else next(iter(options.models), "")
        model = options.models.get(key)
    else:
        key = model.id
    if options.provider is None and model is not None:
        check_model(key, options, model)
    return model


class _Working:
    """This process taking runs from the queue (DBOS's executor, its lease)."""

    def __init__(
        self, config: DurableConfig, agent: Any, known: argparse.Namespace, cwd: str
    ) -> None:
        from harnessc.runtime.durable.engine import Heartbeat, launch_executor
        from harnessc.runtime.durable.steps import set_call_marker, set_step_guard

        self.worker_id = known.worker_id or default_worker_id()
        self.concurrency = known.concurrency or config.concurrency
        self.queue = config.queue
        self.drain_s = known.drain_s
        if self.concurrency < 1:
            raise DurableError("--concurrency must be at least 1")
        _preflight(agent, known, cwd)
        url = launch_executor(
            config,
            agent,
            cwd=cwd,
            executor_id=self.worker_id,
            concurrency=self.concurrency,
            listen=True,
        )
        self.heartbeat = Heartbeat(url, self.worker_id, config.queue, config.lease_s)
        self.heartbeat.start()
        set_step_guard(self.heartbeat.guard)
        set_call_marker(
            None if config.interrupted_tools == "rerun" else self.heartbeat.start_call_async
        )

    def say_started(self, err: TextIO) -> None:
        err.write(
            f"worker {self.worker_id}: taking runs from queue {self.queue} "
            f"({self.concurrency} at once)\n"
        )
        err.flush()

    def stop(self, err: TextIO) -> None:
        """Stop taking runs; those running get ``--drain-s`` seconds to finish (the rest
        stay pending: this worker restarted, or another after the lease, recovers them)."""
        from harnessc.runtime.durable.engine import shutdown

        err.write(f"worker {self.worker_id}: stopping (runs get {self.drain_s:g} s to finish)\n")
        err.flush()
        self.heartbeat.stop()
        shutdown(self.drain_s)


def _worker(
    config: DurableConfig, agent: Any, known: argparse.Namespace, cwd: str, err: TextIO
) -> int:
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    working = _Working(config, agent, known, cwd)
    working.say_started(err)
    stop.wait()
    working.stop(err)
    return EXIT_DONE


def _serve_and_work(
    config: DurableConfig,
    agent: Any,
    known: argparse.Namespace,
    cwd: str,
    serve_args: list[str],
    err: TextIO,
    prog: str,
    serve: ServeDoor | None,
) -> int:
    """``--serve --worker``: serve the agent (``run_cli --serve``) while this process
    takes runs from the queue as a worker. SIGTERM drains the server (new runs get 429),
    then the worker (its runs get ``--drain-s`` seconds)."""
    from harnessc.runtime.cli.main import run_cli

    args = [*serve_args, "--cwd", cwd]
    if known.base_url:
        args += ["--base-url", known.base_url]
    if known.sandbox:
        args += ["--sandbox", known.sandbox]
    working = _Working(config, agent, known, cwd)
    try:
        code = run_cli(
            agent.build_options,
            args,
            agent_name=agent.agent_name,
            session_dir=agent.session_dir,
            session_repo=agent.session_repo,
            prog=prog,
            serve=serve,
        )
    finally:
        working.stop(err)
    return int(code)


def _source(agent: Any, cwd: str) -> Any:
    """The agent as the run-control layer knows it: its session store (for a durable
    run, the store its workers open)."""
    from harnessc.runtime.runs.agent import AgentSource

    return AgentSource(
        agent.build_options, agent_name=agent.agent_name, cwd=cwd, store=agent.repo(cwd)
    )


def _one_shot(
    config: DurableConfig,
    agent: Any,
    prompt: str,
    cwd: str,
    out: TextIO,
    err: TextIO,
    known: argparse.Namespace,
    prog: str,
) -> int:
    """Run one prompt here as a durable workflow (no queue: this process runs it),
    through the run-control layer and shown as a plain one-shot run is shown (a typed
    agent's value alone on stdout); at a pull point this process ends (exit 3) and the
    run waits for its answer, which a worker takes once the lease has passed."""
    from harnessc.runtime.durable.engine import Heartbeat, launch_executor, shutdown
    from harnessc.runtime.durable.steps import set_call_marker, set_step_guard

    model = _preflight(agent, known, cwd)
    worker_id = f"{default_worker_id()}-run-{os.getpid()}"
    url = launch_executor(
        config, agent, cwd=cwd, executor_id=worker_id, concurrency=1, listen=False
    )
    # a lease of its own: should this process stop at a pull point (or die), the run is
    # another worker's to continue once the lease has passed
    heartbeat = Heartbeat(url, worker_id, config.queue, config.lease_s, claim=False)
    heartbeat.start()
    set_step_guard(heartbeat.guard)
    set_call_marker(None if config.interrupted_tools == "rerun" else heartbeat.start_call_async)
    paused = False
    try:
        code, paused = asyncio.run(
            _run_here(config, agent, prompt, cwd, out, err, known, prog, model)
        )
        return code
    finally:
        if paused:
            # DBOS stopped now would record the waiting run as failed: this process ends
            # here instead, as if it had died, and the run stays pending
            out.flush()
            err.flush()
            os._exit(EXIT_PAUSED)
        heartbeat.stop()
        shutdown(0)


async def _run_here(
    config: DurableConfig,
    agent: Any,
    prompt: str,
    cwd: str,
    out: TextIO,
    err: TextIO,
    known: argparse.Namespace,
    prog: str,
    model: Any,
) -> tuple[int, bool]:
    """The run, started and followed through the run-control layer; its exit code and
    whether it waits at a pull point."""
    from harnessc.runtime.cli.output import JsonPrinter, TextPrinter
    from harnessc.runtime.cli.render import make_printer
    from harnessc.runtime.cli.summary import RunSummary, model_is_priced
    from harnessc.runtime.core.events import Event
    from harnessc.runtime.durable.clients import DurableRuns
    from harnessc.runtime.durable.control import DurableRunControl
    from harnessc.runtime.runs.control import RunRequest

    typed = _typed(agent, cwd)
    printer: JsonPrinter | TextPrinter = (
        JsonPrinter(out) if known.json else make_printer(err if typed else out, err)
    )
    summary = RunSummary(priced=model is not None and model_is_priced(model))

    def listen(event: Event) -> None:
        printer(event)
        summary(event)

    client = await asyncio.to_thread(DurableRuns, config, cwd)
    control = DurableRunControl(_source(agent, cwd), client, here=True)
    try:
        run = await control.start(RunRequest(prompt, listener=listen))
        err.write(f"run {run.id}\n")
        err.flush()
        summary.start()
        await control.settled(run)
    finally:
        if isinstance(printer, TextPrinter):
            printer.close()
        await control.drain(0)
    text = printer if isinstance(printer, TextPrinter) else None
    code = show_verbs.report(run, prog, err, text=text)
    if run.paused:
        err.write(f"(the run is durable: once answered, a worker continues it: {prog} --worker)\n")
        return code, True
    if run.status == "done" and run.output is not None and text is not None:
        out.write(json.dumps(run.output, ensure_ascii=False) + "\n")  # the typed value
        out.flush()
    if text is not None:
        summary.stop()
        text.line(f"[usage] {summary.line()}")
    return code, False


def _typed(agent: Any, cwd: str) -> bool:
    """Whether the agent has ``output:`` (its reply goes to stderr, its value to stdout)."""
    from harnessc.runtime.session import Session

    try:
        return agent.build_options(session=Session(), cwd=cwd).output is not None
    except Exception:
        return False
