"""The command line of every generated agent: ``run_cli(build_options, argv, ...)``.

The terminal's door to the run-control layer (``harnessc.runtime.runs``). Modules:
``args`` (the flags and their checks), ``parser`` (argparse's parser, its help and the
completion script), ``main`` (one invocation), ``host`` (the protocols the
interactive mode sees), ``one_shot`` (a run and its report), ``output`` / ``render``
(what a run prints), ``pause`` (pull points as lines), ``sessions`` (session flags and
listings), ``summary`` (the line after a run), ``repl/`` (the interactive mode and its
/commands), ``durable`` / ``durable_show`` (the durable verbs). ``--serve`` reaches the
server through the door ``harnessc.runtime.run_cli`` passes in: this package never imports it.
"""

from __future__ import annotations

from harnessc.runtime.cli.args import (
    EXIT_ABORTED,
    EXIT_DONE,
    EXIT_ERROR,
    EXIT_PAUSED,
    EXIT_USAGE,
    UsageError,
)
from harnessc.runtime.cli.main import CliInvocation, run_cli
from harnessc.runtime.cli.shutdown import close_harness

__all__ = [
    "EXIT_ABORTED",
    "EXIT_DONE",
    "EXIT_ERROR",
    "EXIT_PAUSED",
    "EXIT_USAGE",
    "CliInvocation",
    "UsageError",
    "close_harness",
    "run_cli",
]
