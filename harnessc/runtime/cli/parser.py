"""The argparse parser of a generated agent's command line: its flags, help text and
completion script. ``cli.args.read_command_line`` uses it for any command line but one of
prompt words alone."""

from __future__ import annotations

import argparse

from harnessc.runtime.core.options import ThinkingLevel

__all__ = ["build_parser", "completion_script"]


_DESCRIPTION = """\
Run the {agent} agent. With a PROMPT it runs once: the reply streams to stdout, tool
activity, retries and warnings go to stderr. Without one it reads the prompt from piped
stdin, or starts the interactive mode when stdin is a terminal.
"""

_EPILOG = """\
examples:
  {prog} "list the files here"            one run, reply on stdout
  git diff | {prog} "review this:" -      "-" is replaced by stdin
  {prog} -i                               interactive (type /help for commands)
  {prog} --json "hi" | jq .type           one JSON event per line
  {prog} --continue "and now the tests"   go on in its latest session in this directory
  {prog} --sessions                       list sessions; --search "error AND retry"
  {prog} --session 3f2a --fork 9c1d0e2a "try another way"
  {prog} --continue --rewind 9c1d0e2a --rewind-mode both   conversation and files back there
  {prog} --continue --resume-with '{{"call_1": "approved"}}'
  {prog} --continue --resume-with '{{"call_1": {{"error": "denied"}}}}'
  {prog} --continue --max-turns 40        resume after a budget pause, higher limit
  {prog} --continue --approve call_7      allow a call a permission rule held, go on
  {prog} --permission-mode plan "..."     only read-only tools run
  {prog} --model KEY --thinking high "..."   KEY: a key of the spec's models
  {prog} --base-url http://127.0.0.1:8765/v1 "hi"   e.g. the demo: harnessc serve-demo

interactive commands: /help /status /compact /model /thinking /tools /templates
  /skill:NAME /fork /tree /rewind /sessions /reload /quit; Ctrl-C aborts the running turn (the
  session is kept), Ctrl-D quits; text typed while the agent works is queued as steering.

exit codes: 0 done, 1 runtime error, 2 usage or configuration error (e.g. a missing API
  key), 3 paused (external tool results pending, a permission ask or a hook waiting for
  an answer, or a budget limit hit), 130 aborted by Ctrl-C.
"""


def build_parser(prog: str, agent_name: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=prog,
        description=_DESCRIPTION.format(agent=agent_name),
        epilog=_EPILOG.format(prog=prog),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "prompt",
        nargs="*",
        metavar="PROMPT",
        help='the prompt (words are joined with spaces); "-" stands for stdin',
    )

    mode = parser.add_argument_group("modes")
    mode.add_argument(
        "-i", "--interactive", action="store_true", help="interactive mode (REPL with history)"
    )
    mode.add_argument(
        "--show-thinking",
        action="store_true",
        help="print the model's thinking text (dimmed, on stderr) as it streams",
    )
    mode.add_argument(
        "--json",
        action="store_true",
        help="print every event as one JSON object per line on stdout (nothing else)",
    )

    sessions = parser.add_argument_group("sessions")
    sessions.add_argument(
        "--session", metavar="ID|PATH", help="open a session (id, id prefix or file) and go on"
    )
    sessions.add_argument(
        "-c",
        "--continue",
        dest="continue_",
        action="store_true",
        help="go on in this agent's latest session in this directory",
    )
    sessions.add_argument(
        "--fork",
        metavar="ENTRY_ID",
        help="start a new session holding the branch up to ENTRY_ID of --session "
        "(default: this agent's latest session in this directory)",
    )
    sessions.add_argument(
        "--sessions", action="store_true", help="list sessions: id, time, name, first prompt"
    )
    sessions.add_argument("--search", metavar="QUERY", help="full-text search of the sessions")
    sessions.add_argument("--session-dir", metavar="DIR", help="where session files live")
    sessions.add_argument(
        "--no-session", action="store_true", help="keep the session in memory only"
    )
    sessions.add_argument(
        "--rewind",
        metavar="ENTRY_ID",
        help="move the session (--continue / --session) to ENTRY_ID first, with its files "
        "as the checkpoint before the next tool batch recorded them (--rewind-mode); the "
        "diff goes to stderr; without a prompt, only that",
    )
    sessions.add_argument(
        "--rewind-mode",
        choices=("both", "conversation", "files"),
        help="what --rewind moves: the conversation and the files, the conversation only, "
        "or the files only",
    )
    sessions.add_argument(
        "--rewind-force",
        action="store_true",
        help="--rewind also overwrites files changed outside the agent since the checkpoint "
        "(otherwise they are reported and kept)",
    )
    sessions.add_argument(
        "--rewind-dry-run",
        action="store_true",
        help="show what --rewind would change, change nothing",
    )

    overrides = parser.add_argument_group("overrides")
    overrides.add_argument("--model", metavar="KEY", help="use this model (a key of the spec)")
    overrides.add_argument(
        "--thinking",
        metavar="LEVEL",
        choices=[level.value for level in ThinkingLevel],
        help="thinking level: " + ", ".join(level.value for level in ThinkingLevel),
    )
    overrides.add_argument(
        "--base-url",
        metavar="URL",
        help="send every model's requests to URL (also $HARNESSC_BASE_URL); a server on this "
        "machine needs no API key",
    )
    overrides.add_argument("--cwd", metavar="DIR", help="run in this directory")
    overrides.add_argument(
        "--max-turns", metavar="N", type=_positive_int, help="turn budget of the run"
    )
    overrides.add_argument(
        "--replay",
        metavar="SESSION",
        help="serve the model replies recorded in a session (a file, an id or an id prefix; "
        "no model calls)",
    )
    overrides.add_argument(
        "--watch", action="store_true", help="reload skills and templates when they change"
    )

    mode.add_argument(
        "--completion",
        metavar="SHELL",
        choices=("bash", "zsh"),
        help="print a shell completion script for this command (bash or zsh) and exit",
    )

    overrides.add_argument(
        "--sandbox",
        metavar="MODE",
        choices=("on", "auto", "off"),
        help="the sandbox of bash, command hooks and MCP servers: on (required), auto (where "
        "this machine can), off (none); default: the spec's",
    )
    overrides.add_argument(
        "--permission-mode",
        metavar="MODE",
        choices=("default", "accept-edits", "plan", "read-only", "bypass"),
        help="default (the spec's permissions), accept-edits (no asking for edits and "
        "writes), plan / read-only (only read-only tools), bypass (nothing asked; deny "
        "rules hold)",
    )

    pull = parser.add_argument_group("pull points")
    pull.add_argument(
        "--resume-with",
        metavar="JSON",
        help='results of the pending tool calls: {"CALL_ID": "result" | {"error": "..."}}; '
        '"-" reads them from stdin (implies --continue without --session)',
    )
    pull.add_argument(
        "--approve",
        metavar="CALL_ID",
        action="append",
        default=[],
        help="allow a tool call a permission rule held (the run paused on an ask) and "
        "continue; repeatable (implies --continue without --session)",
    )
    pull.add_argument(
        "--deny",
        metavar="CALL_ID",
        action="append",
        default=[],
        help="refuse a held tool call and continue; repeatable",
    )
    serving = parser.add_argument_group("serving (needs pip install 'harnessc[serve]')")
    serving.add_argument(
        "--serve",
        action="store_true",
        help="serve the agent over HTTP (native API, OpenAI-compatible, AG-UI, A2A, a dev page)",
    )
    serving.add_argument(
        "--mcp",
        action="store_true",
        help="serve the agent as an MCP server over stdin and stdout (a tool named after it; "
        "pip install 'harnessc[mcp]'); over HTTP every --serve has /mcp",
    )
    serving.add_argument("--host", default="127.0.0.1", help="address to listen on")
    serving.add_argument("--port", type=int, default=8000, help="port (0: any free one)")
    serving.add_argument(
        "--token-env",
        metavar="NAME",
        help="the variable holding the bearer token clients must send "
        "(default: $HARNESSC_SERVE_TOKEN when set)",
    )
    serving.add_argument(
        "--max-runs", metavar="N", type=_positive_int, default=64, help="runs working at once"
    )
    serving.add_argument(
        "--max-connections",
        metavar="N",
        type=_positive_int,
        default=1024,
        help="connections open at once",
    )
    serving.add_argument(
        "--header-timeout",
        metavar="S",
        type=_positive_float,
        default=10.0,
        help="seconds a client has to send a request's head",
    )
    serving.add_argument(
        "--body-timeout",
        metavar="S",
        type=_positive_float,
        default=30.0,
        help="seconds a client has to send a request's body, after its head",
    )
    return parser


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be more than 0 (got {text})")
    return value


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1 (got {value})")
    return value


def completion_script(parser: argparse.ArgumentParser, prog: str, shell: str) -> str:
    """A completion script for ``prog``'s flags (and the values of --model-free choices).

    bash: ``eval "$(PROG --completion bash)"``; zsh uses the same through bashcompinit.
    """
    flags: list[str] = []
    choices: dict[str, list[str]] = {}
    for action in parser._actions:  # argparse has no public way to list them
        flags.extend(o for o in action.option_strings if o.startswith("--"))
        if action.choices and action.option_strings:
            for option in action.option_strings:
                choices[option] = [str(c) for c in action.choices]
    command = prog.split()[-1]
    name = "_harnessc_agent_" + "".join(c if c.isalnum() else "_" for c in command)
    cases = "".join(
        f'        {option}) COMPREPLY=($(compgen -W "{" ".join(values)}" -- "$cur")); return;;\n'
        for option, values in sorted(choices.items())
    )
    body = (
        f"{name}() {{\n"
        '    local cur="${COMP_WORDS[COMP_CWORD]}" prev="${COMP_WORDS[COMP_CWORD-1]}"\n'
        '    case "$prev" in\n'
        f"{cases}"
        '        --cwd|--session-dir) COMPREPLY=($(compgen -d -- "$cur")); return;;\n'
        '        --replay|--session) COMPREPLY=($(compgen -f -- "$cur")); return;;\n'
        "    esac\n"
        f'    [[ "$cur" == -* ]] && COMPREPLY=($(compgen -W "{" ".join(sorted(set(flags)))}" -- "$cur"))\n'
        "}\n"
        f"complete -o default -F {name} {command}\n"
    )
    if shell == "zsh":
        return "autoload -U +X bashcompinit && bashcompinit\n" + body
    return body
