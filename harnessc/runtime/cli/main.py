"""The command line of every generated agent: ``run_cli(build_options, argv, ...)``.

One-shot runs stream the reply to stdout (``--json``: one event per line), the
interactive mode lives in ``cli_repl``; sessions, overrides and pull points are
resolved here before the harness runs. Exit codes: 0 done, 1 runtime error, 2 usage
or configuration error, 3 paused, 130 aborted by Ctrl-C.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sys
from collections.abc import Awaitable, Callable
from dataclasses import replace
from pathlib import Path
from shlex import quote
from typing import Any, TextIO

from harnessc.runtime.cli.args import (
    EXIT_ABORTED,
    EXIT_DONE,
    EXIT_ERROR,
    EXIT_PAUSED,
    EXIT_USAGE,
    UsageError,
    build_parser,
    check_args,
    program_name,
)
from harnessc.runtime.cli.host import BuildOptions
from harnessc.runtime.cli.output import JsonPrinter, TextPrinter
from harnessc.runtime.cli.pause import budget_limit, check_results, describe_pause
from harnessc.runtime.cli.render import make_printer
from harnessc.runtime.cli.sessions import (
    SessionChoice,
    choose_session,
    discard_if_empty,
    discard_if_unused,
)
from harnessc.runtime.cli.shutdown import close_harness
from harnessc.runtime.cli.summary import RunSummary, model_is_priced
from harnessc.runtime.harness import AgentHarness, HarnessBusyError, RunResult
from harnessc.runtime.options import AgentHarnessOptions

__all__ = [
    "EXIT_ABORTED",
    "EXIT_DONE",
    "EXIT_ERROR",
    "EXIT_PAUSED",
    "EXIT_USAGE",
    "CliInvocation",
    "close_harness",
    "run_cli",
]


def run_cli(
    build_options: BuildOptions,
    argv: list[str] | None = None,
    *,
    agent_name: str,
    session_dir: str | Path | None = None,
    prog: str | None = None,
) -> int:
    """Run a generated agent from the command line; returns the process exit code.

    ``prog`` is the command shown in help and "continue with" hints; default: how the
    process was started (``program_name()``).
    """
    prog = prog or program_name()
    parser = build_parser(prog, agent_name)
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help (0) or a usage error argparse already printed (2)
        return exc.code if isinstance(exc.code, int) else (EXIT_DONE if exc.code is None else 2)
    cli = CliInvocation(
        build_options, args, prog=prog, agent_name=agent_name, session_dir=session_dir
    )
    try:
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
        args: argparse.Namespace,
        *,
        prog: str,
        agent_name: str,
        session_dir: str | Path | None,
    ) -> None:
        self.build_options = build_options
        self.args = args
        self.prog = prog
        self.agent_name = agent_name
        self.session_dir: str | Path | None = args.session_dir or session_dir
        self.out: TextIO = sys.stdout
        self.err: TextIO = sys.stderr
        self._saved_stdout: TextIO | None = None
        self.cwd = os.getcwd()
        self.choice: SessionChoice | None = None
        self.resume_results: dict[str, Any] | None = None  # --resume-with, for -i too
        self.prompt_text: str | None = None  # the one-shot prompt

    # -- entry -----------------------------------------------------------------

    def main(self) -> int:
        args = self.args
        check_args(args)
        self.enter_cwd()
        if args.sessions or args.search:
            return self.listing()
        if args.json:
            # Only events go to stdout: anything else printing to it (a hook) goes to stderr.
            self._saved_stdout = sys.stdout
            sys.stdout = sys.stderr
        prompt = self.read_prompt()
        results = self.read_resume_with()
        self.resume_results = results
        harness = self.make_harness(required_session=results is not None)
        try:
            action = self.choose_action(harness, prompt, results)
        except UsageError:
            self.discard(harness)
            raise
        if action == "repl":
            from harnessc.runtime.cli.repl import run_repl

            return run_repl(self, harness, prompt)
        return asyncio.run(self.one_shot(harness, action, prompt, results))

    def listing(self) -> int:
        """--sessions / --search: print and exit."""
        from harnessc.runtime.cli.sessions import (
            list_sessions,
            open_repo,
            print_hits,
            print_sessions,
            search_sessions,
        )

        repo = open_repo(self.session_dir)
        if not any(repo.root.glob("*/*.jsonl")) and not any(repo.root.glob("*.jsonl")):
            # Nothing stored yet: answer without creating the folder or the index there.
            if not self.args.json:
                self.out.write("no sessions\n" if self.args.sessions else "no matches\n")
            self.out.flush()
            return EXIT_DONE
        if self.args.sessions:
            print_sessions(
                list_sessions(repo, self.agent_name),
                self.out,
                as_json=self.args.json,
                cwd=self.cwd,
            )
        else:
            hits = search_sessions(repo.root, self.args.search)
            print_hits(hits, self.out, as_json=self.args.json)
        self.out.flush()
        return EXIT_DONE

    def restore_stdout(self) -> None:
        if self._saved_stdout is not None:
            sys.stdout = self._saved_stdout
            self._saved_stdout = None

    def enter_cwd(self) -> None:
        """Move to --cwd; paths given on the command line stay relative to where we started."""
        args = self.args
        for name in ("session_dir", "replay"):
            value = getattr(args, name)
            if value:
                setattr(args, name, os.path.abspath(os.path.expanduser(value)))
        if args.session and ("/" in args.session or args.session.endswith(".jsonl")):
            args.session = os.path.abspath(os.path.expanduser(args.session))
        if args.session_dir:
            self.session_dir = args.session_dir
        if self.args.cwd:
            target = Path(self.args.cwd).expanduser()
            if not target.is_dir():
                raise UsageError(f"--cwd: no directory {self.args.cwd}")
            os.chdir(target)
        self.cwd = os.getcwd()

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
        )
        self.choice = choice
        if choice.note:
            self.err.write(f"{choice.note}\n")
        try:
            options = self.build_options(session=choice.session, cwd=self.cwd)
        except Exception as exc:
            if choice.new:
                discard_if_empty(choice.session)
            raise UsageError(f"cannot build the agent: {_describe(exc)}") from None
        if choice.session is not None and options.session is not choice.session:
            # build_options made its own session although one was given (an empty
            # session is falsy, so ``session or repo.create()`` ignores it): use ours.
            discard_if_empty(options.session)
            options.session = choice.session
        try:
            self.apply_overrides(options)
            harness = AgentHarness(options)
        except UsageError:
            discard_if_empty(options.session) if choice.new else _close(options.session)
            raise
        except Exception as exc:
            discard_if_empty(options.session) if choice.new else _close(options.session)
            raise UsageError(f"cannot start the agent: {_describe(exc)}") from None
        try:
            self.check_api_key(harness, options)
        except UsageError:
            self.discard(harness)
            raise
        return harness

    def apply_overrides(self, options: AgentHarnessOptions) -> None:
        args = self.args
        if args.model is not None and args.model not in options.models:
            known = ", ".join(options.models) or "none"
            raise UsageError(f"--model: unknown model {args.model!r}; known: {known}")
        base_url = args.base_url or os.environ.get(BASE_URL_VARIABLE) or None
        if base_url:
            override_base_url(
                options, base_url, "--base-url" if args.base_url else BASE_URL_VARIABLE
            )
        if args.max_turns is not None:
            from harnessc.runtime.budget import Budget

            options.budget = replace(options.budget or Budget(), turns=args.max_turns)
        if args.replay is not None:
            from harnessc.runtime.providers.replay import ReplayProvider

            try:
                options.provider = ReplayProvider.from_session_file(args.replay)
            except OSError as exc:
                raise UsageError(f"--replay: cannot read {args.replay}: {exc.strerror}") from None

    def check_api_key(self, harness: AgentHarness, options: AgentHarnessOptions) -> None:
        """Fail fast, naming the variable, when the model's API key is not set or its
        base_url (often from the environment) has no scheme."""
        if options.provider is not None:
            return
        key = self.args.model or harness.model_key()
        model = options.models.get(key, harness.model) if self.args.model else harness.model
        if model.base_url and not model.base_url.startswith(("http://", "https://")):
            raise UsageError(
                f"model {key!r} ({model.id}): base_url {model.base_url!r} has no scheme; "
                f"write http://{model.base_url} (check the spec and its environment variables)"
            )
        variable = model.api_key_env
        if variable and not os.environ.get(variable):
            raise UsageError(
                f"no API key for model {key!r} ({model.id}): "
                f"set the environment variable {variable}"
            )

    def discard(self, harness: AgentHarness) -> None:
        """Drop a harness that never ran: close its session, delete it when fresh and empty."""
        if self.choice is not None and self.choice.new:
            discard_if_empty(harness.session)
        else:
            harness.session.close()

    def choose_action(
        self, harness: AgentHarness, prompt: str | None, results: dict[str, Any] | None
    ) -> str:
        """What to do: "repl", "resume_tools", "resume" or "prompt"."""
        args = self.args
        paused = harness.paused_reason
        if results is not None:
            if paused != "awaiting_tool":
                raise UsageError(
                    f"--resume-with: session {harness.session.id} is not waiting for tool results"
                )
            check_results(results, harness.pending_tool_calls)
            return "repl" if args.interactive else "resume_tools"
        if args.interactive:
            return "repl"
        if prompt is not None:
            if paused == "awaiting_tool":
                raise UsageError(self.pending_message(harness))
            return "prompt"
        if paused == "paused":
            return "resume"
        interactive_ok = _stdin_is_tty() and not args.json
        if paused == "awaiting_tool":
            if interactive_ok:
                return "repl"
            raise UsageError(self.pending_message(harness))
        if interactive_ok:
            return "repl"
        raise UsageError("no prompt: pass PROMPT, pipe it on stdin, or use -i")

    def pending_message(self, harness: AgentHarness) -> str:
        pending = harness.pending_tool_calls
        lines = describe_pause("awaiting_tool", pending, awaiting_tool=True)
        example = ", ".join(f'"{c.id}": "..."' for c in pending)
        return (
            f"session {harness.session.id} is waiting for tool results; continue it with "
            f"--resume-with '{{{example}}}'\n" + "\n".join(lines)
        )

    # -- one run -----------------------------------------------------------------

    async def prepare(self, harness: AgentHarness) -> None:
        """Overrides that go through the harness (recorded in the session), --watch."""
        args = self.args
        if args.model is not None and args.model != harness.model_key():
            await harness.set_model(args.model)
        if args.thinking is not None and args.thinking != harness.thinking_level.value:
            await harness.set_thinking_level(args.thinking)
        if args.watch:
            try:
                await harness.watch_resources()
            except Exception as exc:
                self.err.write(f"[warning] --watch: cannot watch resources: {_describe(exc)}\n")

    async def one_shot(
        self,
        harness: AgentHarness,
        action: str,
        prompt: str | None,
        results: dict[str, Any] | None,
    ) -> int:
        self.prompt_text = prompt
        printer: JsonPrinter | TextPrinter
        printer = (
            JsonPrinter(self.out)
            if self.args.json
            else make_printer(self.out, self.err, show_thinking=self.args.show_thinking)
        )
        harness.subscribe(printer)
        summary = RunSummary(priced=model_is_priced(harness.model))
        harness.subscribe(summary)
        if isinstance(printer, TextPrinter):
            printer.know_calls(harness.pending_tool_calls)
        loop = asyncio.get_running_loop()
        interrupts = 0

        def on_interrupt() -> None:
            nonlocal interrupts
            interrupts += 1
            if interrupts > 1:
                raise KeyboardInterrupt
            self.err.write("\n[interrupted] aborting the run (Ctrl-C again to quit at once)\n")
            harness.abort("interrupted by the user")

        _add_signal_handler(loop, on_interrupt)
        try:
            await self.prepare(harness)
            run: Awaitable[RunResult]
            if action == "resume_tools":
                assert results is not None
                run = harness.resume(results)
            elif action == "resume":
                run = harness.resume()
            else:
                assert prompt is not None
                run = harness.prompt(prompt)
            try:
                result = await run
            except HarnessBusyError as exc:
                raise UsageError(str(exc)) from None
        finally:
            _remove_signal_handler(loop)
            if isinstance(printer, TextPrinter):
                printer.close()
            await close_harness(harness)
            if self.choice is not None and self.choice.new:
                discard_if_empty(harness.session)  # a /command answered: nothing to keep
        if self.choice is not None and self.choice.new and result.status == "error":
            discard_if_unused(harness.session)  # the first request failed: nothing to keep
        code = self.report(result, harness, printer)
        if isinstance(printer, TextPrinter) and result.reply is None:
            summary.stop()
            printer.line(f"[usage] {summary.line()}")
        return code

    def report(
        self, result: RunResult, harness: AgentHarness, printer: JsonPrinter | TextPrinter
    ) -> int:
        """Say how the run ended (stderr, or the JSON stream) and pick the exit code."""
        if result.reply is not None:
            if isinstance(printer, JsonPrinter):
                printer.write({"type": "command_reply", "text": result.reply})
            else:
                printer.reply(result.reply)
            if result.reason != "unknown_command":
                return EXIT_DONE
            hint = self.interactive_only_hint(self.prompt_text or "")
            if hint:
                self.err.write(hint + "\n")
            return EXIT_USAGE
        if result.status == "done":
            return EXIT_DONE
        if result.status == "error":
            if isinstance(printer, TextPrinter):
                printer.error(result.reason or "the run failed")
            else:
                self.err.write(f"error: {result.reason or 'the run failed'}\n")
            return EXIT_ERROR
        if result.status == "aborted":
            if harness.session.path:
                self.err.write(f"aborted: the session is kept{self.session_hint(harness)}\n")
            else:
                self.err.write("aborted (the session was in memory only: nothing is kept)\n")
            return EXIT_ABORTED
        if isinstance(printer, TextPrinter):
            for line in self.pause_lines(result, harness):
                self.err.write(line + "\n")
        return EXIT_PAUSED

    def interactive_only_hint(self, prompt: str) -> str | None:
        """``agent /status``: the REPL's own commands work only in the interactive mode."""
        from harnessc.runtime.cli.repl.commands import BUILTIN_COMMANDS
        from harnessc.runtime.commands import split_command

        name = (split_command(prompt) or ("", ""))[0]
        if name not in BUILTIN_COMMANDS and name != "exit":
            return None
        return f"/{name} is a command of the interactive mode: run {self.prog} -i and type /{name}"

    def pause_lines(self, result: RunResult, harness: AgentHarness) -> list[str]:
        awaiting = result.status == "awaiting_tool"
        limit = budget_limit(result.reason)
        used: tuple[float, float | None] | None = None
        if limit is not None:
            used = (harness.budget.used(limit), getattr(harness.budget.budget, limit, None))
        lines = describe_pause(
            result.reason, result.pending_tool_calls, awaiting_tool=awaiting, limit_used=used
        )
        target = self.session_target(harness)
        if target is None:
            lines.append("the session is in memory only (--no-session): it cannot be continued")
            return lines
        if awaiting:
            example = ", ".join(
                f"{json.dumps(c.id)}: " + '"RESULT"' for c in result.pending_tool_calls
            )
            lines.append(
                f"continue with: {self.prog} {target} --resume-with {quote('{' + example + '}')}"
                '  (a result is a string or {"error": "..."})'
            )
        elif limit == "turns":
            raised = int(used[0]) + 10 if used is not None else 10
            lines.append(f"continue with: {self.prog} {target} --max-turns {raised}")
        elif limit is not None:
            lines.append(
                f"the {limit} limit comes from the agent's spec: raise it there, or continue "
                f"with {self.prog} {target} -i and extend it when asked"
            )
        else:
            lines.append(f"continue with: {self.prog} {target}")
        return lines

    def session_target(self, harness: AgentHarness) -> str | None:
        """The flags that reopen this run's session, or None for an in-memory one."""
        path = harness.session.path
        if not path:
            return None
        flags = f"--session {harness.session.id}"
        if self.args.cwd:
            flags += f" --cwd {quote(self.cwd)}"
        if self.session_dir is not None:
            root = Path(self.session_dir).resolve()
            if Path(path).resolve().is_relative_to(root):
                if self.args.session_dir:
                    flags += f" --session-dir {quote(self.args.session_dir)}"
                return flags
        return f"--session {quote(path)}" + (f" --cwd {quote(self.cwd)}" if self.args.cwd else "")

    def session_hint(self, harness: AgentHarness) -> str:
        target = self.session_target(harness)
        return f" (continue with: {self.prog} {target})" if target else ""


BASE_URL_VARIABLE = "HARNESSC_BASE_URL"


def override_base_url(options: AgentHarnessOptions, base_url: str, source: str) -> None:
    """Point every model of the agent at ``base_url``. A model whose key variable is unset
    needs no key on a server of this machine (a local model server, the demo)."""
    from urllib.parse import urlsplit

    if not base_url.startswith(("http://", "https://")):
        raise UsageError(f"{source}: {base_url!r} has no scheme; write http://{base_url}")
    local = (urlsplit(base_url).hostname or "") in ("localhost", "127.0.0.1", "::1")
    models = dict(options.models)
    for key, model in models.items():
        changes: dict[str, Any] = {"base_url": base_url}
        if model.api_key_env and local and not os.environ.get(model.api_key_env):
            changes["api_key_env"] = None
        moved = replace(model, **changes)
        models[key] = moved
        if options.model is model:
            options.model = moved
    options.models = models


def _close(session: Any) -> None:
    if session is not None:
        session.close()


def _stdin_is_tty() -> bool:
    try:
        return sys.stdin is not None and sys.stdin.isatty()
    except (ValueError, OSError):
        return False


def _add_signal_handler(loop: asyncio.AbstractEventLoop, handler: Callable[[], None]) -> None:
    try:
        loop.add_signal_handler(signal.SIGINT, handler)
    except (NotImplementedError, RuntimeError, ValueError):
        pass  # not the main thread, or a platform without it: Ctrl-C raises as usual


def _remove_signal_handler(loop: asyncio.AbstractEventLoop) -> None:
    try:
        loop.remove_signal_handler(signal.SIGINT)
    except (NotImplementedError, RuntimeError, ValueError):
        pass
