"""The command line of every generated agent: ``run_cli(build_options, argv, ...)``.

Modules: ``args`` (the parser), ``main`` (one invocation), ``host`` (the protocols the
interactive mode sees), ``output`` / ``render`` (what a run prints), ``pause`` (pull
points), ``sessions`` (session flags and listings), ``summary`` (the line after a run),
``repl/`` (the interactive mode and its /commands).
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
