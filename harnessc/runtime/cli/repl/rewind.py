"""Rewinding in the interactive mode: ``/rewind`` and the file half of ``/tree`` and
``/fork``.

A move to an entry whose files a checkpoint holds shows what would change (each path,
then the diff) and asks: both the conversation and the files, the conversation only,
the files only, or nothing. A mode given on the command (``files``, ``conversation``,
``both``) skips the question; ``force`` also overwrites files changed outside the
agent since the checkpoint (reported and kept otherwise); ``dry-run`` only shows.
"""

from __future__ import annotations

from typing import Any

from harnessc.runtime.cli.host import ReplHost

__all__ = ["MODE_WORDS", "parse_options", "rewind_command", "rewind_to"]

MODE_WORDS = ("both", "conversation", "files")
_ANSWERS = {
    "b": "both",
    "both": "both",
    "c": "conversation",
    "conversation": "conversation",
    "f": "files",
    "files": "files",
}
_MAX_LINES = 40


def parse_options(words: list[str]) -> tuple[str | None, bool, bool, bool, list[str]]:
    """(mode, force, dry run, summarize, the other words) of a command's words."""
    mode: str | None = None
    force = dry = summarize = False
    rest = []
    for word in words:
        bare = word.lstrip("-")
        if bare in MODE_WORDS:
            mode = bare
        elif bare == "force":
            force = True
        elif bare in ("dry-run", "dry"):
            dry = True
        elif bare == "summarize":
            summarize = True
        else:
            rest.append(word)
    return mode, force, dry, summarize, rest


def _show_plan(repl: ReplHost, plan: Any) -> None:
    lines = plan.lines()
    shown = lines[:_MAX_LINES]
    if len(lines) > _MAX_LINES:
        shown.append(f"... and {len(lines) - _MAX_LINES} more")
    repl.say(f"files: {plan.summary()}\n" + "\n".join(f"  {line}" for line in shown))


async def rewind_to(
    repl: ReplHost,
    target: str,
    *,
    mode: str | None,
    force: bool = False,
    dry_run: bool = False,
    summarize: bool = False,
) -> None:
    """Rewind to ``target``, asking for the mode when none is given."""
    from harnessc.runtime.checkpoints.rewind import RewindError

    harness = repl.harness
    try:
        preview = await harness.rewind(target, mode="files", dry_run=True)
    except RewindError as exc:
        if mode in ("files", "both"):
            repl.say(f"cannot rewind the files: {exc}")
            return
        if mode is None:
            repl.say(f"({exc}: only the conversation moves)")
        preview = None
    plan = preview.plan if preview is not None else None
    if plan is not None:
        _show_plan(repl, plan)
        if preview is not None and preview.diff:
            repl.say(preview.diff)
    if dry_run:
        repl.say("dry run: nothing changed")
        return
    if mode is None:
        if plan is None:
            mode = "conversation"
        else:
            question = (
                "move [b]oth the conversation and the files, [c]onversation only, "
                "[f]iles only, or [n]othing? "
            )
            answer = await repl.ask(question)
            mode = _ANSWERS.get((answer or "").strip().lower())
            if mode is None:
                repl.say("nothing changed")
                return
    try:
        report = await harness.rewind(target, mode=mode, force=force, summarize=summarize)
    except RewindError as exc:
        repl.say(f"cannot rewind: {exc}")
        return
    repl.say(_report_text(report, len(harness.messages)))


def _report_text(report: Any, messages: int) -> str:
    lines = [report.note or ("done" if report.done else "nothing changed")]
    outcome = report.outcome
    if outcome is not None:
        for kept in outcome.kept:
            lines.append(f"  kept {kept.path}: {kept.reason}")
        if outcome.kept:
            lines.append("  (the kept paths are as they were; /rewind ... force overwrites them)")
    if report.moved:
        lines.append(f"moved to {report.entry_id}: {messages} messages in context")
    return "\n".join(lines)


async def rewind_command(repl: ReplHost, args: str) -> None:
    harness = repl.harness
    mode, force, dry, summarize, rest = parse_options(args.split())
    if not rest:
        points = harness.rewind_points(10)
        if not points:
            repl.say(
                "no checkpoints on this branch (they are taken before tool batches that "
                "may change files)"
            )
            return
        lines = ["checkpoints before recent tool batches (newest first):"]
        for number, point in enumerate(points, start=1):
            taken = point.point.checkpoint.time
            changes = point.changes
            what = "no change" if not changes else f"{len(changes)} path(s) would change"
            listed = ", ".join(changes[:6]) + (" ..." if len(changes) > 6 else "")
            lines.append(f"  {number:>2}  {point.entry_id}  {taken}  before {point.label}: {what}")
            if changes:
                lines.append(f"        {listed}")
        lines.append("/rewind N [both|conversation|files] [force] [dry-run] rewinds there")
        repl.say("\n".join(lines))
        return
    target = rest[0]
    if target.isdigit():
        points = harness.rewind_points(int(target))
        if int(target) < 1 or len(points) < int(target):
            repl.say(f"no checkpoint number {target} (/rewind lists them)")
            return
        target = points[int(target) - 1].entry_id
    if harness.session.get_entry(target) is None:
        repl.say(f"no entry {target!r} in this session (/rewind or /tree lists them)")
        return
    await rewind_to(repl, target, mode=mode, force=force, dry_run=dry, summarize=summarize)
