"""The interactive mode: ``run_repl(cli, harness, prompt)``.

``run_repl`` builds the class bound to ``Repl`` in this module, so ``harnessc dev`` can
put its subclass here for one call. With a terminal on stdin and stdout the lines are read
with prompt_toolkit (``repl.prompt``, loaded only then); otherwise (piped input, output
to a file) stdin is read line by line without it.
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any, TextIO, cast

from harnessc.runtime.agent import AgentHarness
from harnessc.runtime.cli.host import CliHost
from harnessc.runtime.cli.repl.session import LineSource, Repl
from harnessc.runtime.cli.tty import TerminalModes

__all__ = ["Repl", "run_repl"]


def run_repl(cli: CliHost, harness: AgentHarness, prompt: str | None) -> int:
    modes = TerminalModes()  # put back on every way out
    try:
        if not (_is_terminal(sys.stdin) and _is_terminal(cli.out)):
            repl = Repl(cli, harness)
            repl.terminal = modes
            return asyncio.run(repl.main(prompt))
        return _run_on_terminal(cli, harness, prompt, modes)
    finally:
        modes.restore()


def _run_on_terminal(
    cli: CliHost, harness: AgentHarness, prompt: str | None, modes: TerminalModes
) -> int:
    from harnessc.runtime.cli.repl.prompt import AboveThePrompt, raw_terminal

    out, err = cli.out, cli.err
    # Output goes above the prompt on screen.
    streams = [cast(TextIO, AboveThePrompt(s)) if _is_terminal(s) else s for s in (out, err)]
    cli.out, cli.err = streams
    try:
        repl = Repl(cli, harness)
        repl.terminal = modes
        repl.scripted = False
        above = [s for s in streams if isinstance(s, AboveThePrompt)]
        repl.open_reader = lambda repl: _terminal_reader(repl, above)
        # Raw from start to end, not only while a prompt reads: keys typed between two
        # prompts wait for the next one (no echo, Ctrl-D is not the tty's end of file).
        with raw_terminal():
            return asyncio.run(repl.main(prompt))
    finally:
        for stream in streams:
            stream.flush()
        cli.out, cli.err = out, err


def _terminal_reader(repl: Repl, streams: list[Any]) -> LineSource:
    from harnessc.runtime.cli.output import Spinner
    from harnessc.runtime.cli.repl.commands import BUILTIN_COMMANDS
    from harnessc.runtime.cli.repl.prompt import StatusLine, TerminalReader

    status = StatusLine(ascii_only=not _unicode(repl.err))
    printer = repl.printer
    if isinstance(printer.spinner, Spinner):  # the status line is drawn above the prompt
        status.suffix = printer.spinner.suffix
        printer.spinner = status  # type: ignore[assignment]

    def commands() -> list[str]:
        names = repl.harness.commands.known(repl.harness.resources)
        return [*(f"/{name}" for name in BUILTIN_COMMANDS), *names]

    return TerminalReader(
        repl.lines,
        history_dir=repl.cli.session_dir,
        commands=commands,
        cwd=repl.cli.cwd,
        status=status,
        streams=streams,
        interrupt=repl.abort_run,
        hint=repl.note,
    )


def _is_terminal(stream: Any) -> bool:
    try:
        return stream is not None and bool(stream.isatty())
    except (ValueError, OSError):
        return False


def _unicode(stream: Any) -> bool:
    encoding = (getattr(stream, "encoding", None) or "").lower().replace("-", "")
    return encoding in ("utf8", "utf8sig")
