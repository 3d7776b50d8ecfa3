"""How a one-shot run ended, for the user: the exit code, and on stderr what a pause
waits for and the command that continues it. It reads the run-control layer's ``Run``
(its status, pause and typed value), the same for a plain run and a durable one."""

from __future__ import annotations

import json
from pathlib import Path
from shlex import quote
from typing import TYPE_CHECKING

from harnessc.runtime.cli.args import EXIT_ABORTED, EXIT_DONE, EXIT_ERROR, EXIT_PAUSED, EXIT_USAGE
from harnessc.runtime.cli.output import JsonPrinter, TextPrinter
from harnessc.runtime.runs.pauses import budget_limit, is_permission_pause

if TYPE_CHECKING:
    from harnessc.runtime.cli.args import CommandLine
    from harnessc.runtime.cli.host import CliHost
    from harnessc.runtime.runs.run import Run
    from harnessc.runtime.session.session import Session

__all__ = ["RunReport"]


class RunReport:
    """Reports the runs of one invocation (``cli``)."""

    def __init__(self, cli: CliHost) -> None:
        self.cli = cli
        self.prog = cli.prog
        self.err = cli.err

    @property
    def args(self) -> CommandLine:
        return self.cli.args

    @property
    def cwd(self) -> str:
        return self.cli.cwd

    @property
    def session_dir(self) -> str | Path | None:
        return self.cli.session_dir

    @property
    def prompt_text(self) -> str | None:
        return self.cli.prompt_text

    def report(self, run: Run, session: Session, printer: JsonPrinter | TextPrinter) -> int:
        """Say how the run ended (stderr, or the JSON stream) and pick the exit code."""
        if run.reply is not None:
            hint = None
            if run.reason == "unknown_command":
                hint = self.interactive_only_hint(self.prompt_text or "")
            if isinstance(printer, JsonPrinter):
                printer.write({"type": "command_reply", "text": run.reply})
            elif not hint:  # ``agent /status`` says only that it needs -i
                printer.reply(run.reply)
            if hint:
                self.err.write(hint + "\n")
            if run.reason != "unknown_command":
                return EXIT_DONE
            return EXIT_USAGE
        if run.status == "done":
            if run.output is not None and isinstance(printer, TextPrinter):
                # the typed result, alone on stdout (the agent_end event carries it in --json)
                self.cli.out.write(json.dumps(run.output, ensure_ascii=False) + "\n")
                self.cli.out.flush()
            return EXIT_DONE
        if run.status == "error":
            if isinstance(printer, TextPrinter):
                printer.error(run.reason or "the run failed")
            else:
                self.err.write(f"error: {run.reason or 'the run failed'}\n")
            return EXIT_ERROR
        if run.status == "aborted":
            self.aborted(session)
            return EXIT_ABORTED
        if isinstance(printer, TextPrinter):
            for line in self.pause_lines(run, session):
                self.err.write(line + "\n")
        return EXIT_PAUSED

    def aborted(self, session: Session) -> None:
        if self.session_target(session) is not None:
            self.err.write(f"aborted: the session is kept{self.session_hint(session)}\n")
        else:
            self.err.write("aborted (the session was in memory only: nothing is kept)\n")

    def interactive_only_hint(self, prompt: str) -> str | None:
        """``agent /status``: the REPL's own commands work only in the interactive mode."""
        from harnessc.runtime.cli.repl.commands import BUILTIN_COMMANDS
        from harnessc.runtime.core.commands import split_command

        name = (split_command(prompt) or ("", ""))[0]
        if name not in BUILTIN_COMMANDS and name != "exit":
            return None
        return f"/{name} is a command of the interactive mode: run {self.prog} -i and type /{name}"

    def pause_lines(self, run: Run, session: Session) -> list[str]:
        from harnessc.runtime.cli.pause import pause_lines

        pause = run.pause
        if pause is None:
            return [f"paused: {run.reason}"]
        lines = pause_lines(pause)
        target = self.session_target(session)
        if target is None:
            lines.append("the session is in memory only (--no-session): it cannot be continued")
            return lines
        limit = budget_limit(pause.reason)
        if is_permission_pause(pause.reason) or pause.held:
            for call_id in [c.id for c in pause.held] or ["CALL_ID"]:
                lines.append(
                    f"continue with: {self.prog} {target} --approve {call_id}  "
                    f"(or --deny {call_id})"
                )
        elif pause.awaiting_tool:
            example = ", ".join(f"{json.dumps(c.id)}: " + '"RESULT"' for c in pause.calls)
            lines.append(
                f"continue with: {self.prog} {target} --resume-with {quote('{' + example + '}')}"
                '  (a result is a string or {"error": "..."})'
            )
        elif limit == "turns":
            used = pause.budget.used if pause.budget is not None else 0
            lines.append(f"continue with: {self.prog} {target} --max-turns {int(used) + 10}")
        elif limit is not None:
            lines.append(
                f"the {limit} limit comes from the agent's spec: raise it there, or continue "
                f"with {self.prog} {target} -i and extend it when asked"
            )
        else:
            lines.append(f"continue with: {self.prog} {target}")
        return lines

    def session_target(self, session: Session) -> str | None:
        """The flags that reopen this run's session, or None for an in-memory one."""
        path = session.path
        if not path:  # in memory, or a store without files (PostgreSQL): by id
            return None if session.storage is None else self._by_id(session)
        flags = f"--session {session.id}"
        if self.args.cwd:
            flags += f" --cwd {quote(self.cwd)}"
        if self.session_dir is not None:
            root = Path(self.session_dir).resolve()
            if Path(path).resolve().is_relative_to(root):
                if self.args.session_dir:
                    flags += f" --session-dir {quote(self.args.session_dir)}"
                return flags
        return f"--session {quote(path)}" + (f" --cwd {quote(self.cwd)}" if self.args.cwd else "")

    def _by_id(self, session: Session) -> str:
        cwd = f" --cwd {quote(self.cwd)}" if self.args.cwd else ""
        return f"--session {session.id}{cwd}"

    def session_hint(self, session: Session) -> str:
        target = self.session_target(session)
        return f" (continue with: {self.prog} {target})" if target else ""
