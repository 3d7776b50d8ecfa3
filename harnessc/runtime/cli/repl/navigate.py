"""The /commands that move between sessions and branches: /fork, /tree, /sessions, /name."""

from __future__ import annotations

from harnessc.runtime.cli.host import ReplHost
from harnessc.runtime.cli.repl.tree import render_tree

__all__ = ["fork_command", "name_command", "sessions_command", "tree_command"]


async def fork_command(repl: ReplHost, args: str) -> None:
    harness = repl.harness
    session = harness.session
    if not session.path:
        repl.say("this session is in memory only (--no-session): nothing to fork")
        return
    from harnessc.runtime.cli.args import UsageError
    from harnessc.runtime.cli.sessions import fork_session, open_repo

    repo = open_repo(repl.cli.session_dir or _dirname_up(session.path))
    try:
        forked = fork_session(repo, session, args or None)
    except UsageError as exc:
        repl.say(str(exc))
        return
    old = session.id
    await repl.switch_session(forked)
    repl.say(f"forked {old[:8]} -> new session {forked.id[:8]} ({forked.path})")


def _dirname_up(path: str) -> str:
    import os

    return os.path.dirname(os.path.dirname(os.path.abspath(path)))


async def tree_command(repl: ReplHost, args: str) -> None:
    harness = repl.harness
    session = harness.session
    if args:
        target, _, option = args.partition(" ")
        option = option.strip()
        if option not in ("", "summarize"):
            repl.say("usage: /tree ENTRY_ID [summarize]")
            return
        if session.get_entry(target) is None:
            repl.say(f"no entry {target!r} in this session (/tree lists them)")
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
    from harnessc.runtime.cli.sessions import list_sessions, open_repo, print_sessions

    try:
        repo = open_repo(repl.cli.session_dir)
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
