"""How a one-shot run ended, for the user: the exit code, and on stderr what a pause
waits for and the command that continues it."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from shlex import quote
from typing import TYPE_CHECKING

from harnessc.runtime.cli.args import EXIT_ABORTED, EXIT_DONE, EXIT_ERROR, EXIT_PAUSED, EXIT_USAGE
from harnessc.runtime.cli.host import CliHost
from harnessc.runtime.cli.output import JsonPrinter, TextPrinter
from harnessc.runtime.cli.pause import budget_limit, describe_pause

if TYPE_CHECKING:
    from harnessc.runtime.agent import AgentHarness, RunResult

__all__ = ["RunReport"]


class RunReport:
    """Reports the runs of one invocation (``cli``)."""

    def __init__(self, cli: CliHost) -> None:
        self.cli = cli
        self.prog = cli.prog
        self.err = cli.err

    @property
    def args(self) -> argparse.Namespace:
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

    def report(
        self, result: RunResult, harness: AgentHarness, printer: JsonPrinter | TextPrinter
    ) -> int:
        """Say how the run ended (stderr, or the JSON stream) and pick the exit code."""
        if result.reply is not None:
            hint = None
            if result.reason == "unknown_command":
                hint = self.interactive_only_hint(self.prompt_text or "")
            if isinstance(printer, JsonPrinter):
                printer.write({"type": "command_reply", "text": result.reply})
            elif not hint:  # ``agent /status`` says only that it needs -i
                printer.reply(result.reply)
            if hint:
                self.err.write(hint + "\n")
            if result.reason != "unknown_command":
                return EXIT_DONE
            return EXIT_USAGE
        if result.status == "done":
            config = harness.options.output
            if config is not None and isinstance(printer, TextPrinter):
                # the typed result, alone on stdout (the agent_end event carries it in --json)
                value = json.dumps(config.to_json(result.output), ensure_ascii=False)
                self.cli.out.write(value + "\n")
                self.cli.out.flush()
            return EXIT_DONE
        if result.status == "error":
            if isinstance(printer, TextPrinter):
                printer.error(result.reason or "the run failed")
            else:
                self.err.write(f"error: {result.reason or 'the run failed'}\n")
            return EXIT_ERROR
        if result.status == "aborted":
            if self.session_target(harness) is not None:
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
        from harnessc.runtime.core.commands import split_command

        name = (split_command(prompt) or ("", ""))[0]
        if name not in BUILTIN_COMMANDS and name != "exit":
            return None
        return f"/{name} is a command of the interactive mode: run {self.prog} -i and type /{name}"

    def pause_lines(self, result: RunResult, harness: AgentHarness) -> list[str]:
        awaiting = result.status == "awaiting_tool" or harness.paused_reason == "awaiting_tool"
        limit = budget_limit(result.reason)
        used: tuple[float, float | None] | None = None
        if limit is not None:
            used = (harness.budget.used(limit), getattr(harness.budget.budget, limit, None))
        run = harness.run_state
        paths = {
            call.id: path
            for record in (run.calls if run is not None else [])
            for call, _, path in record.nested_calls()
        }
        lines = describe_pause(
            result.reason,
            result.pending_tool_calls,
            awaiting_tool=awaiting,
            limit_used=used,
            agent_paths=paths,
        )
        target = self.session_target(harness)
        if target is None:
            lines.append("the session is in memory only (--no-session): it cannot be continued")
            return lines
        from harnessc.runtime.cli.permission import is_permission_pause

        if is_permission_pause(result.reason):
            from harnessc.runtime.permissions.gate import pending_asks

            # only the calls this pause holds: an ask a hook blocked afterwards was never held
            held = [c.id for c in result.pending_tool_calls]
            asks = [i for i in pending_asks(harness.session) if i in held] or held
            for call_id in asks or ["CALL_ID"]:
                lines.append(
                    f"continue with: {self.prog} {target} --approve {call_id}  "
                    f"(or --deny {call_id})"
                )
        elif awaiting:
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
        if not path:  # in memory, or a store without files (PostgreSQL): by id
            return None if harness.session.storage is None else self._by_id(harness)
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

    def _by_id(self, harness: AgentHarness) -> str:
        cwd = f" --cwd {quote(self.cwd)}" if self.args.cwd else ""
        return f"--session {harness.session.id}{cwd}"

    def session_hint(self, harness: AgentHarness) -> str:
        target = self.session_target(harness)
        return f" (continue with: {self.prog} {target})" if target else ""
