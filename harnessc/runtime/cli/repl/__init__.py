"""The interactive mode: ``run_repl(cli, harness, prompt)``.

``run_repl`` builds the class bound to ``Repl`` in this module, so ``harnessc dev`` can
put its subclass here for one call.
"""

from __future__ import annotations

import asyncio

from harnessc.runtime.cli.host import CliHost
from harnessc.runtime.cli.repl.session import Repl
from harnessc.runtime.cli.repl.terminal import terminal_restored
from harnessc.runtime.harness import AgentHarness

__all__ = ["Repl", "run_repl"]


def run_repl(cli: CliHost, harness: AgentHarness, prompt: str | None) -> int:
    repl = Repl(cli, harness)
    with terminal_restored() as modes:
        repl.terminal = modes
        return asyncio.run(repl.main(prompt))
