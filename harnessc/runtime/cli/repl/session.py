"""The interactive mode: a REPL with history, /commands, steering and pull-point questions.

Its runs go through the run-control layer (``runs.plain.PlainRuns``) on the harness it
holds: a line starts one, an answer to a pause is the layer's ``Answer``. Steering,
/commands and tree moves are the harness's own, between runs and during them.

The harness runs in the asyncio loop of the main thread; a reader hands the lines typed
to the loop: on a terminal prompt_toolkit (``prompt.TerminalReader``, set by ``run_repl``),
otherwise a script read from stdin (``lines.ScriptReader``). While a run is going, a line
typed and entered is queued as steering, text typed without Enter goes on at the next
prompt; Ctrl-C aborts the running turn (the session is kept), Ctrl-D quits after it,
SIGTERM aborts it and quits (exit 143), the terminal's modes restored on every way out.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from harnessc.runtime.agent import AgentHarness
from harnessc.runtime.cli.host import CliHost
from harnessc.runtime.cli.output import one_line
from harnessc.runtime.cli.permission import ask_here
from harnessc.runtime.cli.render import make_printer
from harnessc.runtime.cli.repl.banner import banner_lines
from harnessc.runtime.cli.repl.lines import EOF, INTERRUPT, ScriptReader
from harnessc.runtime.cli.repl.pauses import answer_pause
from harnessc.runtime.cli.sessions import has_exchange
from harnessc.runtime.cli.shutdown import close_harness
from harnessc.runtime.cli.summary import RunSummary, model_is_priced
from harnessc.runtime.cli.tty import TerminalModes, add_signal, remove_signal
from harnessc.runtime.core.messages import message_text
from harnessc.runtime.runs.answers import Answer
from harnessc.runtime.runs.control import RunRequest
from harnessc.runtime.runs.errors import Conflict
from harnessc.runtime.runs.plain import PlainRuns
from harnessc.runtime.runs.run import Run

__all__ = ["LineSource", "Repl"]


class LineSource(Protocol):
    """Where the REPL's lines come from (a terminal's prompt, or a script on stdin)."""

    def start(self) -> None: ...

    def request(self, prompt: str, *, question: bool = False) -> bool: ...

    def collect(self) -> None: ...

    def showing(self) -> str | None: ...

    async def aclose(self) -> None: ...


class Repl:
    """One interactive session; ``self.harness`` changes on /fork and /sessions ID."""

    def __init__(self, cli: CliHost, harness: AgentHarness) -> None:
        self.cli = cli
        self.harness = harness
        self.out = cli.out
        self.err = cli.err
        self.printer = make_printer(self.out, self.err, show_thinking=cli.args.show_thinking)
        priced = model_is_priced(harness.model)
        self.summary = RunSummary(priced=priced)  # the whole interactive session
        self.run_summary = RunSummary(priced=priced)  # the latest run
        self._unsubscribe = self._listen(harness)
        # the runs of this session, on the harness it holds (never closed by the layer)
        self.runs = PlainRuns(
            cli.agent(), max_runs=1, kept_runs=16, close_ended=False, keep_events=False
        )
        if self.printer.spinner is not None:  # the status line shows what the session used
            self.printer.spinner.suffix = self.summary.brief
        self.lines: asyncio.Queue[Any] = asyncio.Queue()
        self.reader: LineSource | None = None
        # run_repl sets it on a terminal: the prompt_toolkit reader, made in the loop.
        self.open_reader: Callable[[Repl], LineSource] | None = None
        self.busy = False
        self.asking = False
        self.quit = False
        self.quit_after_run = False  # Ctrl-D during a run: leave once it ends
        self.terminated = False  # SIGTERM: the run is aborted and the REPL quits
        self.terminal: TerminalModes | None = None  # the modes to put back (run_repl sets it)
        self._question: asyncio.Future[Any] | None = None  # a permission question waiting
        self._question_text = ""
        self._asked = asyncio.Event()
        self._one_question = asyncio.Lock()  # sub-agents side by side ask one at a time
        # Lines piped in (``printf 'hi\n/status\n' | agent -i``) are a script: each runs
        # after the previous one finished (no steering), the end of input quits. The "> "
        # prompt is still written: a program driving the REPL sees when it is idle.
        self.scripted = True  # run_repl: False on a terminal
        # A session created for this REPL: deleted again when left without any entry, so
        # opening -i and quitting does not leave an empty "latest" session for --continue.
        fresh = cli.choice is None or cli.choice.new
        self._fresh_path: str | None = harness.session.path if fresh else None

    def _listen(self, harness: AgentHarness) -> Callable[[], None]:
        removers = [harness.subscribe(x) for x in (self.printer, self.summary, self.run_summary)]

        def unsubscribe() -> None:
            for remove in removers:
                remove()

        return unsubscribe

    # -- output ----------------------------------------------------------------

    def say(self, text: str) -> None:
        """Text for the user on stdout (command answers, questions)."""
        self.printer.reply(text)

    def note(self, text: str) -> None:
        self.printer.line(text)

    # -- main loop -------------------------------------------------------------

    async def main(self, prompt: str | None) -> int:
        loop = asyncio.get_running_loop()
        self.lines = asyncio.Queue()
        if self.open_reader is not None:
            self.reader = self.open_reader(self)
        else:
            self.reader = ScriptReader(self.lines, self.out)
        add_signal(loop, "SIGINT", self.on_interrupt)
        add_signal(loop, "SIGTERM", self.on_terminate)
        self._asked = asyncio.Event()
        ask_here(self.harness.options, self.cli.gate, self.ask_permission)
        try:
            await self.cli.prepare(self.harness)
            self.banner()
            self.reader.start()
            results = self.cli.resume_results
            approvals = self.cli.approvals
            if approvals:  # --approve / --deny with -i: the held calls run or are refused
                await self.run(lambda: self.answer_run(Answer(approvals=dict(approvals))))
            elif results is not None and self.harness.paused_reason == "awaiting_tool":
                await self.run(lambda: self.answer_run(Answer(results=results)))
            elif self.harness.paused_reason is not None:
                await self.answer_pause()
            if prompt is not None and not self.quit:
                await self.run(lambda: self.prompt_run(prompt))
            while not self.quit:
                line = await self.next_line("> ")
                if line is EOF:
                    break
                if line is INTERRUPT:
                    continue
                text = str(line).strip()
                if not text:
                    continue
                await self.handle(text)
        finally:
            remove_signal(loop, "SIGINT")
            remove_signal(loop, "SIGTERM")
            await self.reader.aclose()
            self.printer.close()
            await close_harness(self.harness)
            self._drop_if_fresh_and_empty(self.harness.session)
        self.out.write("\n" if not (self.quit or self.scripted) else "")
        self.out.flush()
        return 128 + 15 if self.terminated else 0

    def banner(self) -> None:
        for text in banner_lines(self.cli.agent_name, self.harness):
            self.note(text)

    async def next_line(self, prompt: str, *, question: bool = False) -> Any:
        """The next line typed (or EOF / INTERRUPT); text typed during the last run is
        already in it."""
        assert self.reader is not None
        if self.lines.empty() and not self.reader.request(prompt, question=question) and prompt:
            self.out.write(prompt)
            self.out.flush()
        return await self.lines.get()

    async def ask(self, question: str) -> str | None:
        """Ask the user; None on Ctrl-C or Ctrl-D."""
        self.asking = True
        try:
            line = await self.next_line(question, question=True)
        finally:
            self.asking = False
        if line is EOF:
            self.quit = True
            return None
        if line is INTERRUPT:
            return None
        return str(line).strip()

    async def handle(self, text: str) -> None:
        if text.startswith("/") and not text.startswith("//"):
            from harnessc.runtime.cli.repl.commands import run_command

            await run_command(self, text)
            return
        if self.harness.paused_reason == "awaiting_tool":
            ids = ", ".join(f"{c.name} {c.id}" for c in self.harness.pending_tool_calls)
            self.note(f"the agent is waiting for external tool results ({ids}): /resume answers")
            return
        await self.run(lambda: self.prompt_run(text))

    def on_interrupt(self) -> None:
        if self.abort_run():
            return
        if self.asking:
            self.lines.put_nowait(INTERRUPT)
        elif not self.scripted:  # the prompt is drawn again below the hint
            self.note("(Ctrl-D or /quit to quit)")
        else:
            self.out.write("\n(Ctrl-D or /quit to quit)\n> ")
            self.out.flush()

    def abort_run(self) -> bool:
        """Ctrl-C during a run: abort it (the session is kept). False when idle."""
        if not self.busy:
            return False
        self.note("[interrupted] aborting the run; the session is kept")
        self.harness.abort("interrupted by the user")
        return True

    def on_terminate(self) -> None:
        """SIGTERM: the terminal's modes back at once, then abort the run and quit; a
        second SIGTERM ends the process at once."""
        if self.terminal is not None:
            self.terminal.restore()
        if self.terminated:
            import signal

            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGTERM)
            return
        self.terminated = True
        self.quit = True
        if self._question is not None and not self._question.done():
            self._question.set_result(EOF)
        if self.busy:
            self.quit_after_run = True
            self.harness.abort("terminated (SIGTERM)")
        else:
            self.lines.put_nowait(EOF)

    # -- runs --------------------------------------------------------------------

    async def prompt_run(self, text: str) -> Run:
        """A run of ``text`` on the session's harness (the layer's start)."""
        self.runs.adopt(self.harness)
        return await self.runs.start(RunRequest(text, session=self.harness.session.id))

    async def answer_run(self, answer: Answer) -> Run:
        """The paused run of the session, answered (the layer's answer)."""
        held = self.runs.adopt(self.harness)
        await self.runs.answer(held, answer)
        return held

    async def run(self, start: Callable[[], Awaitable[Run]]) -> Run | None:
        """Run until done or paused; typed lines meanwhile are steering."""
        assert self.reader is not None
        self.busy = True
        self.run_summary.reset()
        self.run_summary.start()
        self.summary.start()
        try:
            started = await start()  # the run's task is made: it begins at the next turn
        except Conflict as exc:
            self.busy = False
            self.note(f"error: {exc}")
            return None
        task: asyncio.Future[Run] = asyncio.ensure_future(self.runs.settled(started))
        try:
            while not task.done():
                if self.scripted and not self._answer_wanted():
                    # A script's next line waits for the run, unless the run asks a question.
                    await self._until_done_or_asked(task, None)
                    continue
                # Keys typed meanwhile: collected quietly (Enter steers), or, while a
                # permission question waits, an ordinary read for its answer.
                if not self._answer_wanted():
                    self.reader.collect()
                else:
                    self.reader.request(self._question_text, question=True)
                getter = asyncio.ensure_future(self.lines.get())
                await self._until_done_or_asked(task, getter)
                if not getter.done():
                    getter.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await getter
                    continue
                line = getter.result()
                if self._question is not None and self._answer_wanted():
                    self._question.set_result(line)
                    continue
                self.steer(line)
            result = task.result()
        finally:
            self.busy = False
        await self.after_run(result)
        if self.quit_after_run:
            self.quit = True
        return result

    async def _until_done_or_asked(
        self, task: asyncio.Future[Any], getter: asyncio.Future[Any] | None
    ) -> None:
        """Wait for the run to end, a line to come (``getter``) or a question to be asked."""
        waiting: set[asyncio.Future[Any]] = {task} if getter is None else {task, getter}
        asked: asyncio.Future[Any] | None = None
        if not self._answer_wanted():
            asked = asyncio.ensure_future(self._asked.wait())
            waiting.add(asked)
        done, _ = await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
        if asked is not None:
            asked.cancel()
            if asked in done:
                self._asked.clear()

    def _answer_wanted(self) -> bool:
        """A permission question waits for its answer."""
        return self._question is not None and not self._question.done()

    def steer(self, line: Any) -> None:
        if line is EOF:
            # Ctrl-D while the agent works: let the run finish, then leave (Ctrl-C aborts).
            if not self.quit_after_run:
                self.note("[quit] leaving when this run ends (Ctrl-C aborts it)")
            self.quit_after_run = True
            return
        if line is INTERRUPT:
            return
        text = str(line).strip()
        if not text:
            return
        if text.startswith("/"):
            self.note("(commands run when the agent is idle; Ctrl-C aborts the run)")
            return
        self.harness.steer(text)
        self.note(f"[steering] queued: {one_line(text, 60)}")

    async def after_run(self, result: Run) -> None:
        if result.reply is None and self.run_summary.turns:
            self.run_summary.stop()
            self.note(f"[usage] {self.run_summary.line()}")
            for line in self.run_summary.breakdown():  # each agent, when sub-agents ran
                self.note(f"[usage]   {line}")
        if result.reply is not None:
            self.say(result.reply)
        elif result.status == "error":
            self.printer.error(result.reason or "the run failed")
        elif result.status == "aborted":
            self.note("[aborted] the session is kept")
            for message in self.harness.clear_queues():  # typed for the run that ended
                self.note(f"[steering] not sent (the run was aborted): {message_text(message)}")
        elif result.status in ("paused", "awaiting_tool") and not (
            self.quit or self.quit_after_run
        ):
            await self.answer_pause()

    async def ask_permission(self, tool: str, args: Any, decision: Any) -> str:
        """The permission gate's question while a run goes: y, n or always (one at a
        time: sub-agents running side by side ask in turn)."""
        async with self._one_question:
            return await self._ask_permission(tool, args, decision)

    async def _ask_permission(self, tool: str, args: Any, decision: Any) -> str:
        from harnessc.runtime.permissions.gate import describe_call

        self.printer.close()  # the spinner stops while we ask
        self.note(f"[permission] {describe_call(tool, args)}: {decision.reason}")
        diff = await self._preview(tool, args)
        if diff:
            self.printer.diff(diff)
        loop = asyncio.get_running_loop()
        self._question = loop.create_future()
        self._question_text = "allow? [y]es / [n]o / [a]lways for this session: "
        self._asked.set()
        try:
            line = await self._question
        finally:
            self._question = None
        if line is EOF:
            self.quit_after_run = True
            return "n"
        if line is INTERRUPT:
            return "n"
        answer = str(line).strip().lower()
        if answer not in ("y", "yes", "a", "always"):
            self.note("[permission] denied")
        return answer

    async def _preview(self, tool: str, args: Any) -> str | None:
        """What an edit or write would change, read before the question is asked."""
        from harnessc.runtime.tools.preview import preview_change

        if tool not in ("write", "edit"):
            return None
        context = await self.harness.tool_context.resolve()
        if context is None:
            context = {"cwd": self.cli.cwd}
        return await asyncio.to_thread(preview_change, tool, args, context)

    # -- pull points -------------------------------------------------------------

    async def answer_pause(self) -> None:
        """Ask the user what a paused run needs: tool results, a bigger budget, a go."""
        await answer_pause(self)

    # -- harness switching (/fork, /sessions ID) ------------------------------------

    async def switch_session(self, session: Any) -> None:
        """Continue in ``session``: a fresh harness built by the agent module around it."""
        old = self.harness
        options = self.cli.build_options(session=session, cwd=self.cli.cwd)
        if options.session is not session:
            from harnessc.runtime.cli.sessions import discard_if_empty

            discard_if_empty(options.session)
            options.session = session
        old_gate = self.cli.gate
        self.cli.apply_overrides(options)  # a new gate: it asks here, as the old one did
        same = session.id == old.session.id  # its "always" answers still hold
        ask_here(options, self.cli.gate, self.ask_permission, old.options if same else None)
        if self.cli.gate is not None and old_gate is not None and same:
            self.cli.gate.remembered = [*old_gate.remembered]
        if old.options.provider is not None and options.provider is None:
            options.provider = old.options.provider
        harness = AgentHarness(options)
        self._unsubscribe()
        self.harness = harness
        self._unsubscribe = self._listen(harness)
        with contextlib.suppress(Exception):
            await old.close()
        self._drop_if_fresh_and_empty(old.session, keep=session.path)
        self.banner()

    def _drop_if_fresh_and_empty(self, session: Any, keep: str | None = None) -> None:
        path = session.path
        if path and path == self._fresh_path and path != keep and not has_exchange(session):
            with contextlib.suppress(OSError):
                os.unlink(path)
            self._fresh_path = None
