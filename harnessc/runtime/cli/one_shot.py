"""A one-shot run: the reply streamed to stdout (``--json``: one event per line), tool
lines and the usage line on stderr, Ctrl-C aborting the run, then the run's report.

The run goes through the run-control layer (``runs.plain.PlainRuns``) as every door's
does: a prompt starts it, ``--resume-with`` / ``--approve`` / ``--deny`` / a bare resume
answer its pause (``runs.answers.Answer``), the printer and the usage line listen to it.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from harnessc.runtime.agent import AgentHarness
from harnessc.runtime.cli.args import UsageError
from harnessc.runtime.cli.output import JsonPrinter, TextPrinter
from harnessc.runtime.cli.quiet_keys import QuietKeys
from harnessc.runtime.cli.render import make_printer
from harnessc.runtime.cli.report import RunReport
from harnessc.runtime.cli.sessions import discard_if_empty, discard_if_unused
from harnessc.runtime.cli.shutdown import close_harness
from harnessc.runtime.cli.summary import RunSummary, model_is_priced
from harnessc.runtime.cli.tty import add_signal, remove_signal
from harnessc.runtime.core.events import Event
from harnessc.runtime.runs.answers import Answer
from harnessc.runtime.runs.control import RunRequest
from harnessc.runtime.runs.errors import Conflict
from harnessc.runtime.runs.plain import PlainRuns
from harnessc.runtime.runs.run import Run

if TYPE_CHECKING:
    from harnessc.runtime.cli.host import CliHost

__all__ = ["run_one_shot"]


async def run_one_shot(
    cli: CliHost,
    harness: AgentHarness,
    action: str,
    prompt: str | None,
    results: dict[str, Any] | None,
) -> int:
    """One run (a prompt, or the answer to a pause) with its reply streamed, then the
    report; the exit code."""
    cli.prompt_text = prompt
    printer: JsonPrinter | TextPrinter
    # a typed run's stdout holds its value as JSON only (``| jq``): the reply goes to stderr
    reply_out = cli.err if harness.options.output is not None else cli.out
    printer = (
        JsonPrinter(cli.out)
        if cli.args.json
        else make_printer(reply_out, cli.err, show_thinking=cli.args.show_thinking)
    )
    summary = RunSummary(priced=model_is_priced(harness.model))

    def listen(event: Event) -> None:
        printer(event)
        summary(event)

    if isinstance(printer, TextPrinter):
        printer.know_calls(harness.pending_tool_calls)
    runs = PlainRuns(cli.agent(), max_runs=1, close_ended=False, keep_events=False)
    loop = asyncio.get_running_loop()
    interrupts = 0
    run: Run | None = None

    def on_interrupt() -> None:
        nonlocal interrupts
        interrupts += 1
        if interrupts > 1:
            raise KeyboardInterrupt
        cli.err.write("\n[interrupted] aborting the run (Ctrl-C again to quit at once)\n")
        harness.abort("interrupted by the user")

    add_signal(loop, "SIGINT", on_interrupt)  # where it cannot: Ctrl-C raises as usual
    # keys typed on a terminal while the spinner runs go to the shell afterwards
    quiet = QuietKeys()
    if isinstance(printer, TextPrinter) and printer.spinner is not None:
        quiet.start()
    try:
        unsubscribe = harness.subscribe(listen)  # what the overrides change, shown too
        try:
            await cli.prepare(harness)
        finally:
            unsubscribe()
        held = runs.adopt(harness)
        summary.start()
        if action == "prompt":
            assert prompt is not None
            request = RunRequest(prompt, session=harness.session.id, listener=listen)
            run = await runs.start(request)
        else:
            held.listeners.append(listen)
            try:
                await runs.answer(held, _answer(cli, action, results))
            except Conflict as exc:
                raise UsageError(str(exc)) from None
            run = held
        await runs.settled(run)
    finally:
        remove_signal(loop, "SIGINT")
        if isinstance(printer, TextPrinter):
            printer.close()
        quiet.stop()
        await close_harness(harness)
        if cli.choice is not None and cli.choice.new:
            # a /command answered: nothing to keep
            discard_if_empty(harness.session, cli.store())
    assert run is not None
    if cli.choice is not None and cli.choice.new and run.status == "error":
        # the first request failed: nothing to keep
        discard_if_unused(harness.session, cli.store())
    code = RunReport(cli).report(run, harness.session, printer)
    if isinstance(printer, TextPrinter) and run.reply is None:
        summary.stop()
        printer.line(f"[usage] {summary.line()}")
        for line in summary.breakdown():  # each agent of the tree, when sub-agents ran
            printer.line(f"[usage]   {line}")
    return code


def _answer(cli: CliHost, action: str, results: dict[str, Any] | None) -> Answer:
    """The answer an invocation gives the paused run of its session; ``--max-turns``
    raises the turns limit of the run and of a sub-agent its own limit paused."""
    turns = getattr(cli.args, "max_turns", None)
    budget: dict[str, float] = {"turns": turns} if turns is not None else {}
    if action == "resume_tools":
        assert results is not None
        return Answer(results=results, budget=budget)
    if action == "answers":
        assert cli.approvals is not None
        return Answer(approvals=dict(cli.approvals), budget=budget)  # type: ignore[arg-type]
    return Answer(budget=budget)
