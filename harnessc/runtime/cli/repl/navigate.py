"""The /commands that move between sessions and branches: /fork, /tree, /sessions, /name."""

from __future__ import annotations

from harnessc.runtime.cli.host import ReplHost
from harnessc.runtime.cli.repl.tree import render_tree

__all__ = ["fork_command", "name_command", "sessions_command", "tree_command"]


async def fork_command(repl: ReplHost, args: str) -> None:
    from harnessc.runtime.cli.repl.rewind import parse_options, rewind_to

    harness = repl.harness
    session = harness.session
    mode, force, _, _, rest = parse_options(args.split())
    args = " ".join(rest)
    if args and mode is None and harness.options.checkpoints is not None:
        mode = await _fork_files_question(repl, args)
        if mode is None:
            return
    if mode == "files":  # the files only: no new session
        await rewind_to(repl, args or (session.leaf_id or ""), mode="files", force=force)
        return
    if not session.path and session.storage is None:
        repl.say("this session is in memory only (--no-session): nothing to fork")
        return
    if mode == "both" and args and session.get_entry(args) is not None:
        # the files first, by this session's checkpoints: a fork copies the branch only
        # up to the entry, without the checkpoints taken after it that hold its files
        await rewind_to(repl, args, mode="files", force=force)
    from harnessc.runtime.cli.args import UsageError
    from harnessc.runtime.cli.sessions import fork_session, open_repo

    if repl.cli.session_dir or not session.path:  # the agent's store (files or PostgreSQL)
        repo = repl.cli.sessions_repo()
    else:  # a session file opened by its path: fork beside it
        repo = open_repo(_dirname_up(session.path))
    try:
        forked = fork_session(repo, session, args or None)
    except UsageError as exc:
        repl.say(str(exc))
        return
    old = session.id
    await repl.switch_session(forked)
    repl.say(f"forked {old[:8]} -> new session {forked.id[:8]} ({forked.path or 'stored'})")


async def _fork_files_question(repl: ReplHost, entry_id: str) -> str | None:
    """Ask whether the files move with a fork to ``entry_id`` (when a checkpoint holds
    them): both (fork and files), conversation (fork only), files (no fork)."""
    harness = repl.harness
    if harness.session.get_entry(entry_id) is None:
        return "conversation"  # fork_session says what is wrong
    from harnessc.runtime.checkpoints.rewind import RewindError

    try:
        preview = await harness.rewind(entry_id, mode="files", dry_run=True)
    except RewindError:
        return "conversation"
    plan = preview.plan
    if plan is None or not plan.changes:
        return "conversation"
    repl.say(
        f"files at {entry_id}: {plan.summary()}\n" + "\n".join(f"  {x}" for x in plan.lines()[:40])
    )
    answer = await repl.ask(
        "fork with [b]oth the conversation and the files, the [c]onversation only, "
        "the [f]iles only (no fork), or [n]othing? "
    )
    mode = {"b": "both", "c": "conversation", "f": "files"}.get((answer or "").strip()[:1].lower())
    if mode is None:
        repl.say("nothing changed")
    return mode


def _dirname_up(path: str) -> str:
    import os

    return os.path.dirname(os.path.dirname(os.path.abspath(path)))


async def tree_command(repl: ReplHost, args: str) -> None:
    harness = repl.harness
    session = harness.session
    if args:
        from harnessc.runtime.cli.repl.rewind import parse_options, rewind_to

        mode, force, dry, summarize, rest = parse_options(args.split())
        if len(rest) != 1:
            repl.say("usage: /tree ENTRY_ID [summarize] [both|conversation|files] [force]")
            return
        target = rest[0]
        option = "summarize" if summarize else ""
        if session.get_entry(target) is None:
            repl.say(f"no entry {target!r} in this session (/tree lists them)")
            return
        if harness.options.checkpoints is not None:  # the files may move too
            await rewind_to(repl, target, mode=mode, force=force, dry_run=dry, summarize=summarize)
            return
        # The harness's navigation: session_before_tree / session_tree hooks, an optional
        # branch summary, and a paused run left behind on the old branch is cleared.
        moved = await harness.navigate_tree(target, summarize=option == "summarize")
        if moved.cancelled:
            repl.say(f"not moved: a session_before_tree hook cancelled the move to {target}")
            return
        summary = " (the branch left behind is summarized)" if moved.summary_entry else ""
        repl.say(f"moved to {target}: {len(harness.messages)} messages in context{summary}")
        return
    lines = render_tree(session)
    repl.say("\n".join(lines) if lines else "the session is empty")


async def sessions_command(repl: ReplHost, args: str) -> None:
    from harnessc.runtime.cli.args import UsageError
    from harnessc.runtime.cli.sessions import list_sessions, print_sessions

    try:
        repo = repl.cli.sessions_repo()
    except UsageError as exc:
        repl.say(str(exc))
        return
    if args:
        if repl.harness.session.id.startswith(args):
            repl.say("already in that session")
            return
        try:
            session = repo.open(args)
        except Exception as exc:
            repl.say(f"cannot open {args}: {exc}")
            return
        await repl.switch_session(session)
        return
    import io

    buffer = io.StringIO()
    mine = list_sessions(repo, repl.cli.agent_name)[:30]
    print_sessions(mine, buffer, as_json=False, cwd=repl.cli.cwd)
    repl.say(buffer.getvalue().rstrip("\n") + "\n/sessions ID switches")


async def name_command(repl: ReplHost, args: str) -> None:
    session = repl.harness.session
    if not args:
        current = session.name
        repl.say(f"name: {current}" if current else "this session has no name; /name NAME sets one")
        return
    name = " ".join(args.split())
    session.set_name(name)
    repl.say(f"named: {name}")
