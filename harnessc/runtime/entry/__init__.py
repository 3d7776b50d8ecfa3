"""A generated agent's entry points: ``run_cli`` (and ``run_durable_cli`` for a spec with
``durable:``), the command line with every door it opens.

The terminal (``runtime.cli``) and the server (``runtime.serve``) are doors side by
side on the run-control layer, and neither imports the other: the agent's ``--serve``
flag reaches the server through the door passed here. The server is imported only when
``--serve`` is given.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from harnessc.runtime.runs.agent import AgentSource

__all__ = ["run_cli", "run_durable_cli", "serve_door"]


def serve_door(source: AgentSource, args: argparse.Namespace, err: TextIO, prog: str) -> int:
    """``--serve``: the agent served over HTTP with the flags of its command line."""
    from harnessc.runtime.serve.launch import serve_agent

    return serve_agent(source, args, err, prog)


def run_cli(build_options: Callable[..., Any], argv: list[str] | None = None, **kwargs: Any) -> int:
    """The agent's command line (``runtime.cli.main.run_cli``), able to serve."""
    from harnessc.runtime.cli.main import run_cli as terminal

    kwargs.setdefault("serve", serve_door)
    return terminal(build_options, argv, **kwargs)


def run_durable_cli(
    build_options: Callable[..., Any], argv: Sequence[str] | None = None, **kwargs: Any
) -> int:
    """The command line of an agent with ``durable:`` (``runtime.cli.durable``), able to
    serve."""
    from harnessc.runtime.cli.durable import run_durable_cli as terminal

    kwargs.setdefault("serve", serve_door)
    return terminal(build_options, argv, **kwargs)
