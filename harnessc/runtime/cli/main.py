"""The command line of every generated agent: ``run_cli(build_options, argv, ...)``.

Sessions, overrides and pull points are resolved here before the harness runs; the
run itself is ``one_shot.run_one_shot`` or the interactive mode of ``repl``, both on
the run-control layer. ``--serve`` hands the agent (``runs.agent.AgentSource``) to the
server door it was given (``serve``: the terminal never imports the server; the entry
point ``harnessc.runtime.run_cli`` passes it). Exit codes: 0 done, 1 runtime
error, 2 usage or configuration error, 3 paused, 130 aborted by Ctrl-C.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from harnessc.runtime.agent import AgentHarness
from harnessc.runtime.cli.actions import choose_action
from harnessc.runtime.cli.args import (
    EXIT_ABORTED,
    EXIT_DONE,
    EXIT_ERROR,
    EXIT_PAUSED,
    EXIT_USAGE,
    CommandLine,
    UsageError,
    check_args,
    program_name,
    read_command_line,
)
from harnessc.runtime.cli.sessions import (
    SessionChoice,
    choose_session,
    discard_if_empty,
)
from harnessc.runtime.cli.shutdown import close_harness
from harnessc.runtime.cli.start_up import StartUp
from harnessc.runtime.options.harness_options import AgentHarnessOptions
from harnessc.runtime.session.repo_protocol import SessionRepo
from harnessc.runtime.support.data_folder import (
    DataFolder,
    FolderSetting,
    legacy_note,
    resolve_folder,
)

if TYPE_CHECKING:
    from harnessc.runtime.cli.host import BuildOptions
    from harnessc.runtime.permissions.gate import PermissionGate
    from harnessc.runtime.runs.agent import AgentSource

__all__ = [
    "EXIT_ABORTED",
    "EXIT_DONE",
    "EXIT_ERROR",
    "EXIT_PAUSED",
    "EXIT_USAGE",
    "CliInvocation",
    "ServeDoor",
    "SessionRepoSource",
    "close_harness",
    "run_cli",
]

# The agent's session store, or a function making it (the generated ``session_repo``,
# which reads its URL from the environment when called).
SessionRepoSource = SessionRepo | Callable[[], SessionRepo]
# The server door ``--serve`` hands the agent to: (agent, flags, stderr, prog) -> exit code.
ServeDoor = Callable[["AgentSource", CommandLine, TextIO, str], int]


def run_cli(
    build_options: BuildOptions,
    argv: list[str] | None = None,
    *,
    agent_name: str,
    session_dir: FolderSetting | None = None,
    prog: str | None = None,
    session_repo: SessionRepoSource | None = None,
    serve: ServeDoor | None = None,
) -> int:
    """Run a generated agent from the command line; returns the process exit code.

    ``prog`` is the command shown in help and "continue with" hints; default: how the
    process was started (``program_name()``). ``session_dir``: a folder (relative: to the
    working directory) or ``DataFolder("sessions")``, the project's per-user data folder
    (``support.data_folder``). ``session_repo``: where the agent's
    sessions live when that is not JSONL files under ``session_dir`` (the PostgreSQL
    store): ``--sessions``, ``--search``, ``--continue`` and ``--session`` use it unless
    ``--session-dir`` names a folder of files. ``argv`` None: the process's own command
    line (``sys.argv``), so the process is the agent's and its start-up is kept out of
    the run's garbage collections (``start_up.StartUp``). ``serve``: what ``--serve``
    runs (None: ``--serve`` is refused).
    """
    prog = prog or program_name()
    try:
        args = read_command_line(argv, prog, agent_name)
    except SystemExit as exc:  # --help (0) or a usage error argparse already printed (2)
        return exc.code if isinstance(exc.code, int) else (EXIT_DONE if exc.code is None else 2)
    if args.completion:
        from harnessc.runtime.cli.parser import build_parser, completion_script

        parser = build_parser(prog, agent_name)
        sys.stdout.write(completion_script(parser, prog, args.completion))
        return EXIT_DONE
    cli = CliInvocation(
        build_options,
        args,
        prog=prog,
        agent_name=agent_name,
        session_dir=session_dir,
        session_repo=session_repo,
        start_up=StartUp(own_process=argv is None),
        serve=serve,
    )
    try:
        with cli.start_up:
            return cli.main()
    except UsageError as exc:
        sys.stderr.write(f"{prog}: error: {exc}\n")
        return EXIT_USAGE
    except KeyboardInterrupt:
        sys.stderr.write("\ninterrupted\n")
        return EXIT_ABORTED
    except BrokenPipeError:
        # stdout was closed by a reader (``| head``): stop quietly.
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError):
            pass
        return EXIT_DONE
    finally:
        cli.restore_stdout()


def _protect_secrets() -> None:
    """Before a program the model can direct may start (a tool, a hook or an extension
    of the agent, or any agent ``--serve`` builds): no child can read the agent's keys
    through /proc (``processes.children``). An agent with none of them starts no program
    on the model's behalf, and does not load ctypes for it."""
    from harnessc.runtime.processes.children import protect_secrets

    protect_secrets()


def _describe(exc: BaseException) -> str:
    if isinstance(exc, KeyError) and exc.args:
        return str(exc.args[0])
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class CliInvocation:
    """One invocation: arguments in, exit code out.

    The interactive mode (and ``harnessc dev``) use ``build_options``, ``cwd``,
    ``session_dir``, ``apply_overrides`` and ``prepare`` to rebuild a harness around
    another session.
    """

    def __init__(
        self,
        build_options: BuildOptions,
        args: CommandLine,
        *,
        prog: str,
        agent_name: str,
        session_dir: FolderSetting | None,
        session_repo: SessionRepoSource | None = None,
        start_up: StartUp | None = None,
        serve: ServeDoor | None = None,
    ) -> None:
        self.build_options = build_options
        self.serve = serve
        self.start_up = start_up or StartUp(own_process=False)
        self.args = args
        self.prog = prog
        self.agent_name = agent_name
        # the spec's session folder (a path or DataFolder), made absolute by enter_cwd
        self.session_setting: FolderSetting | None = args.session_dir or session_dir
        self.session_dir: str | Path | None = None
        self.out: TextIO = sys.stdout
        self.err: TextIO = sys.stderr
        self._saved_stdout: TextIO | None = None
        self.cwd = os.getcwd()
        self.choice: SessionChoice | None = None
        self.resume_results: dict[str, Any] | None = None  # --resume-with, for -i too
        self.prompt_text: str | None = None  # the one-shot prompt
        self.gate: PermissionGate | None = None  # the permission rules' tool_call hook
        self.approvals: dict[str, Any] | None = None  # --approve / --deny: held calls' answers
        self._repo_source = session_repo
        self._repo: SessionRepo | None = None

    # -- entry -----------------------------------------------------------------

    def main(self) -> int:
        args = self.args
        check_args(args)
        self.enter_cwd()
        if args.sessions or args.search:
            return self.listing()
        if args.serve:
            if self.serve is None:
                raise UsageError("--serve: this command line cannot serve the agent")
            _protect_secrets()  # every harness it serves is built later, per request
            self.start_up.begin_run()
            return self.serve(self.agent(), args, self.err, self.prog)
        if args.json:
            # Only events go to stdout: anything else printing to it (a hook) goes to stderr.
            self._saved_stdout = sys.stdout
            sys.stdout = sys.stderr
        prompt = self.read_prompt()
        results = self.read_resume_with()
        self.resume_results = results
        answers = bool(self.args.approve or self.args.deny)
        harness = self.make_harness(required_session=results is not None or answers)
        for note in harness.checkpoint_notes():  # a checkpoint or rewind a kill cut short
            self.err.write(f"[checkpoints] {note}\n")
        if args.rewind:
            code = self.rewind(harness)
            if code != EXIT_DONE or (prompt is None and not args.interactive):
                asyncio.run(close_harness(harness))
                return code
        try:
            action = choose_action(self, harness, prompt, results)
        except UsageError:
            self.discard(harness)
            raise
        if action == "repl":
            from harnessc.runtime.cli.repl import run_repl

            self.start_up.begin_run()
            return run_repl(self, harness, prompt)
        from harnessc.runtime.cli.one_shot import run_one_shot
        from harnessc.runtime.providers.clients import load_network_stack

        load_network_stack()  # the run's first request is next: its import is start-up
        self.start_up.begin_run()
        return asyncio.run(run_one_shot(self, harness, action, prompt, results))

    def rewind(self, harness: AgentHarness) -> int:
        """--rewind: the changes and the diff on stderr before any file is touched (a dry
        run first), then the move and its outcome."""
        from harnessc.runtime.checkpoints.rewind import RewindError

        args = self.args
        mode = args.rewind_mode or "both"

        async def preview_then_rewind() -> Any:
            if mode != "conversation":
                shown = await harness.rewind(args.rewind, mode=mode, dry_run=True)
                plan = shown.plan
                if plan is not None:
                    self.err.write(f"[rewind] files: {plan.summary()}\n")
                    for line in plan.lines():
                        self.err.write(f"[rewind]   {line}\n")
                    if shown.diff:
                        self.err.write(shown.diff + "\n")
                self.err.flush()
                if args.rewind_dry_run:
                    return shown
            return await harness.rewind(
                args.rewind, mode=mode, force=args.rewind_force, dry_run=args.rewind_dry_run
            )

        try:
            report = asyncio.run(preview_then_rewind())
        except (RewindError, KeyError) as exc:
            self.err.write(f"{self.prog}: --rewind: {_describe(exc)}\n")
            return EXIT_ERROR
        for kept in report.outcome.kept if report.outcome is not None else []:
            self.err.write(f"[rewind] kept {kept.path}: {kept.reason}\n")
        self.err.write(f"[rewind] {report.note}\n")
        return EXIT_DONE

    def listing(self) -> int:
        """--sessions / --search: print and exit."""
        from harnessc.runtime.cli.sessions import print_listing

        return print_listing(
            self.session_dir,
            self.agent_name,
            search=None if self.args.sessions else self.args.search,
            as_json=self.args.json,
            cwd=self.cwd,
            out=self.out,
            err=self.err,
            repo=self.store(),
        )

    def store(self) -> SessionRepo | None:
        """The agent's own session store (None: JSONL files under ``session_dir``).
        ``--session-dir`` on the command line always means files."""
        if self._repo_source is None or self.args.session_dir:
            return None
        if self._repo is None:
            source = self._repo_source
            try:
                self._repo = source if isinstance(source, SessionRepo) else source()
            except KeyError as exc:  # env(): the store's URL variable is unset
                raise UsageError(_describe(exc)) from None
        return self._repo

    def sessions_repo(self) -> SessionRepo:
        """Where this agent's sessions are listed, opened and forked (for /commands)."""
        from harnessc.runtime.cli.sessions import open_repo

        return self.store() or open_repo(self.session_dir)

    def agent(self) -> AgentSource:
        """The agent as the run-control layer builds it: this invocation's overrides, its
        session store (None: in memory, ``--no-session``)."""
        from harnessc.runtime.runs.agent import AgentSource

        store = None
        if not self.args.no_session:
            store = self.store()
            if store is None and self.session_dir is not None:
                from harnessc.runtime.session.repo import JsonlSessionRepo

                store = JsonlSessionRepo(os.path.join(self.cwd, self.session_dir))
        return AgentSource(
            self.build_options,
            agent_name=self.agent_name,
            cwd=self.cwd,
            store=store,
            adjust=self.apply_overrides,
            model=self.args.model,
        )

    def restore_stdout(self) -> None:
        if self._saved_stdout is not None:
            sys.stdout = self._saved_stdout
            self._saved_stdout = None

    def enter_cwd(self) -> None:
        """Move to --cwd; paths given on the command line stay relative to where we started."""
        args = self.args
        if args.session_dir:
            args.session_dir = os.path.abspath(os.path.expanduser(args.session_dir))
        if args.replay and _names_a_file(args.replay):
            args.replay = os.path.abspath(os.path.expanduser(args.replay))
        if args.session and _names_a_file(args.session):
            args.session = os.path.abspath(os.path.expanduser(args.session))
        if args.session_dir:
            self.session_setting = args.session_dir
        if self.args.cwd:
            target = Path(self.args.cwd).expanduser()
            if not target.is_dir():
                raise UsageError(f"--cwd: no directory {self.args.cwd}")
            os.chdir(target)
        self.cwd = os.getcwd()
        setting = self.session_setting
        if setting is not None:
            self.session_dir = resolve_folder(setting, self.cwd)
        uses_default = isinstance(setting, DataFolder) and not args.no_session
        note = legacy_note(self.cwd) if uses_default else None
        if note:
            self.err.write(note + "\n")

    # -- inputs ----------------------------------------------------------------

    def read_prompt(self) -> str | None:
        """The prompt words ("-" = stdin), else piped stdin, else None."""
        words: list[str] = self.args.prompt
        if words:
            if "-" in words:
                # Words around "-" stay a sentence; stdin's text is set apart by blank lines.
                data = sys.stdin.read().strip()
                parts: list[list[str]] = [[]]
                for word in words:
                    if word == "-":
                        parts += [[data], []]
                    else:
                        parts[-1].append(word)
                text = "\n\n".join(" ".join(p) for p in parts if " ".join(p).strip())
            else:
                text = " ".join(words)
            if not text.strip():
                raise UsageError("the prompt is empty")
            return text
        if self.args.interactive or self.args.resume_with is not None or _stdin_is_tty():
            return None
        data = sys.stdin.read().strip()
        return data or None

    def read_resume_with(self) -> dict[str, Any] | None:
        raw = self.args.resume_with
        if raw is None:
            return None
        from harnessc.runtime.cli.pause import parse_resume_with

        return parse_resume_with(sys.stdin.read() if raw == "-" else raw)

    # -- building the harness ----------------------------------------------------

    def make_harness(self, *, required_session: bool) -> AgentHarness:
        args = self.args
        continue_ = args.continue_ or (required_session and not args.session)
        choice = choose_session(
            session_arg=args.session,
            continue_=continue_,
            fork=args.fork,
            no_session=args.no_session,
            session_dir=self.session_dir,
            dir_given=bool(args.session_dir),
            cwd=self.cwd,
            agent_name=self.agent_name,
            required=required_session,
            repo=self.store(),
        )
        self.choice = choice
        if choice.note:
            self.err.write(f"{choice.note}\n")
        try:
            options = self.build_options(session=choice.session, cwd=self.cwd)
        except Exception as exc:
            if choice.new:
                discard_if_empty(choice.session, self.store())
            raise UsageError(f"cannot build the agent: {_describe(exc)}") from None
        if choice.session is not None and options.session is not choice.session:
            # build_options made its own session although one was given (an empty
            # session is falsy, so ``session or repo.create()`` ignores it): use ours.
            discard_if_empty(options.session, self.store())
            options.session = choice.session
        try:
            self.apply_overrides(options)
            if options.tools or options.hooks or options.extensions:
                _protect_secrets()  # before any of them can start a program
            harness = AgentHarness(options)
        except UsageError:
            self._drop_fresh(options.session, choice.new)
            raise
        except Exception as exc:
            self._drop_fresh(options.session, choice.new)
            raise UsageError(f"cannot start the agent: {_describe(exc)}") from None
        try:
            self.check_api_key(harness, options)
        except UsageError:
            self.discard(harness)
            raise
        return harness

    def apply_overrides(self, options: AgentHarnessOptions) -> None:
        """The command line's changes to fresh options (also for a REPL session switch)."""
        from harnessc.runtime.runs.overrides import Overrides, apply_overrides, base_url_from

        args = self.args
        replay = args.replay
        if replay and not _names_a_file(replay):  # an id or id prefix, as for --session
            args.replay = self.session_file(replay, "--replay")
        base_url, source = base_url_from(args.base_url) or (None, "--base-url")
        overrides = Overrides(
            model=args.model,
            base_url=base_url,
            base_url_source=source,
            max_turns=args.max_turns,
            replay=args.replay,
            permission_mode=args.permission_mode,
            sandbox=getattr(args, "sandbox", None),
        )
        self.gate = apply_overrides(
            options, overrides, lambda text: self.err.write(f"[warning] {text}\n")
        )

    def session_file(self, target: str, flag: str) -> str:
        """The file of a session id or id prefix in the agent's session store."""
        from harnessc.runtime.session import SessionNotFoundError

        try:
            session = self.sessions_repo().open(target)
        except SessionNotFoundError as exc:
            raise UsageError(f"{flag}: {exc}") from None
        path = session.path
        session.close()
        if path is None:
            raise UsageError(f"{flag}: session {target!r} is not kept in a file")
        return path

    def check_api_key(self, harness: AgentHarness, options: AgentHarnessOptions) -> None:
        from harnessc.runtime.runs.overrides import check_model

        if options.provider is None:
            check_model(self.args.model or harness.model_key(), options, harness.model)

    def discard(self, harness: AgentHarness) -> None:
        """Drop a harness that never ran: close its session, delete it when fresh and empty."""
        self._drop_fresh(harness.session, self.choice is not None and self.choice.new)

    def _drop_fresh(self, session: Any, new: bool) -> None:
        if new:
            discard_if_empty(session, self.store())
        else:
            _close(session)

    async def prepare(self, harness: AgentHarness) -> None:
        """Overrides that go through the harness (recorded in the session), --watch; the
        skills' and templates' diagnostics, shown once at the start (as pi does)."""
        args = self.args
        for problem in harness.resources.diagnostics:
            self.err.write(f"[resources] {problem.path}: {problem.message}\n")
        if args.watch:  # harnessc dev: say which context files the prompt holds
            for item in harness.resources.context_files:
                self.err.write(f"[context] {item.path}\n")
        if args.model is not None and args.model != harness.model_key():
            await harness.set_model(args.model)
        if args.thinking is not None and args.thinking != harness.thinking_level.value:
            await harness.set_thinking_level(args.thinking)
        if args.watch:
            try:
                await harness.watch_resources()
            except Exception as exc:
                self.err.write(f"[warning] --watch: cannot watch resources: {_describe(exc)}\n")


def _names_a_file(target: str) -> bool:
    """--session TARGET is a session file (made absolute before --cwd moves), not an id
    or a store's own name such as ``postgres:harnessc/ID``."""
    if target.endswith(".jsonl"):
        return True
    return "/" in target and (
        os.path.exists(os.path.expanduser(target)) or ":" not in target.split("/", 1)[0]
    )


def _close(session: Any) -> None:
    if session is not None:
        session.close()


def _stdin_is_tty() -> bool:
    try:
        return sys.stdin is not None and sys.stdin.isatty()
    except (ValueError, OSError):
        return False
