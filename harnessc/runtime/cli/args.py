"""The command line of a generated agent: its flags, the checks of their combinations, the
exit codes.

A command line of prompt words alone (the common one-shot run) is read without argparse;
argparse reads any other (a flag, ``--help``, a usage error) with ``cli.parser``'s parser.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from harnessc.runtime.runs.errors import SetupError

__all__ = [
    "EXIT_ABORTED",
    "EXIT_DONE",
    "EXIT_ERROR",
    "EXIT_PAUSED",
    "EXIT_USAGE",
    "CommandLine",
    "UsageError",
    "check_args",
    "program_name",
    "read_command_line",
]

EXIT_DONE = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_PAUSED = 3
EXIT_ABORTED = 130  # Ctrl-C in one-shot mode (the shell convention 128 + SIGINT)


# A usage or configuration problem: printed as ``PROG: error: ...``, exit code 2. The
# run-control layer's SetupError (an unknown model, a missing API key...) is the same.
UsageError = SetupError


def program_name(argv0: str | None = None) -> str:
    """How the user started the agent, for help and "continue with" hints."""
    arg = argv0 if argv0 is not None else (sys.argv[0] if sys.argv else "")
    if not arg or arg in ("-c", "-m"):
        return "agent"
    if arg.endswith(".py"):
        return f"python {arg}"
    return os.path.basename(arg)


class CommandLine:
    """One invocation's flags under the parser's names (``args.prompt``,
    ``args.continue_``...): argparse fills one, ``read_command_line`` makes one."""

    def __init__(self, **values: Any) -> None:
        self.__dict__.update(values)

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={value!r}" for name, value in vars(self).items())
        return f"CommandLine({fields})"

    if TYPE_CHECKING:

        def __getattr__(self, name: str) -> Any: ...

        def __setattr__(self, name: str, value: Any) -> None: ...


def _defaults() -> dict[str, Any]:
    """Every flag of ``cli.parser.build_parser`` at its default, new lists each time (the
    parser's own: ``tests/cli/test_command_line.py`` compares them)."""
    return {
        "interactive": False,
        "show_thinking": False,
        "json": False,
        "session": None,
        "continue_": False,
        "fork": None,
        "sessions": False,
        "search": None,
        "session_dir": None,
        "no_session": False,
        "rewind": None,
        "rewind_mode": None,
        "rewind_force": False,
        "rewind_dry_run": False,
        "model": None,
        "thinking": None,
        "base_url": None,
        "cwd": None,
        "max_turns": None,
        "replay": None,
        "watch": False,
        "completion": None,
        "sandbox": None,
        "permission_mode": None,
        "resume_with": None,
        "approve": [],
        "deny": [],
        "serve": False,
        "mcp": False,
        "host": "127.0.0.1",
        "port": 8000,
        "token_env": None,
        "max_runs": 64,
        "max_connections": 1024,
        "header_timeout": 10.0,
        "body_timeout": 30.0,
    }


def read_command_line(argv: Sequence[str] | None, prog: str, agent_name: str) -> CommandLine:
    """The flags of ``argv`` (None: ``sys.argv[1:]``); raises SystemExit as argparse does
    (0 after ``--help``, 2 after a usage error it printed).

    Words none of which starts with "-" (but "-" itself, stdin) are all prompt words and
    every flag is at its default, as argparse would read them: they are read without it
    (argparse and its help machinery are a third of a MiB of a one-shot run's memory).
    """
    words = list(sys.argv[1:] if argv is None else argv)
    if all(word == "-" or not word.startswith("-") for word in words):
        return CommandLine(prompt=words, **_defaults())
    from harnessc.runtime.cli.parser import build_parser

    return build_parser(prog, agent_name).parse_args(words, namespace=CommandLine())


def check_args(args: CommandLine) -> None:
    """Combinations argparse cannot express; raises UsageError."""
    listing = [
        flag for flag, on in (("--sessions", args.sessions), ("--search", args.search)) if on
    ]
    if len(listing) > 1:
        raise UsageError("--sessions and --search cannot be combined")
    if listing and (args.prompt or args.interactive or args.resume_with is not None):
        raise UsageError(f"{listing[0]} takes no prompt")
    if args.json and args.interactive:
        raise UsageError("--json and --interactive cannot be combined")
    if args.session and args.continue_:
        raise UsageError("--session and --continue cannot be combined")
    if args.no_session and (args.session or args.continue_ or args.fork):
        raise UsageError("--no-session cannot be combined with --session, --continue or --fork")
    if args.no_session and args.resume_with is not None:
        raise UsageError("--resume-with needs a stored session (not --no-session)")
    if args.resume_with is not None and args.prompt:
        raise UsageError("--resume-with continues a paused run and takes no prompt")
    if args.resume_with is not None and args.fork:
        raise UsageError("--resume-with cannot be combined with --fork")
    answers = args.approve or args.deny
    if answers and (args.prompt or args.resume_with is not None or args.fork):
        raise UsageError(
            "--approve / --deny continue a paused run: no prompt, --resume-with or --fork"
        )
    if getattr(args, "mcp", False):
        args.serve = True  # --mcp serves, over stdin and stdout
    if args.serve and (
        args.prompt or args.interactive or args.resume_with is not None or answers or args.json
    ):
        raise UsageError("--serve takes no prompt, -i, --json, --resume-with or --approve / --deny")
    if args.serve and (args.session or args.continue_ or args.fork):
        raise UsageError(
            "--serve starts or continues sessions per request: no --session, --continue or --fork"
        )
    if answers and args.no_session:
        raise UsageError("--approve / --deny need a stored session (not --no-session)")
    rewinding = args.rewind_mode or args.rewind_force or args.rewind_dry_run
    if rewinding and not args.rewind:
        raise UsageError("--rewind-mode, --rewind-force and --rewind-dry-run go with --rewind")
    if args.rewind:
        if not (args.session or args.continue_):
            raise UsageError("--rewind needs the session to move: --continue or --session ID")
        if args.rewind_mode is None and not args.rewind_dry_run:
            raise UsageError(
                "--rewind needs --rewind-mode both, conversation or files (what moves)"
            )
        if args.fork or args.serve or args.resume_with is not None or answers:
            raise UsageError(
                "--rewind cannot be combined with --fork, --serve, --resume-with or "
                "--approve / --deny"
            )
