"""Run a spec without writing its module: ``harnessc run`` and ``harnessc dev``.

The generated text is executed as a module named after the agent whose ``__file__`` is
where ``harnessc build`` would write it, so its relative paths resolve as in a build.

``dev`` runs the agent's interactive mode (``run_cli -i --watch``: skills and
templates hot-reload) and checks the spec between turns: when its bytes changed and it
still validates, the module is recompiled and the harness rebuilt around the same
session, so the conversation continues with the new models, tools, hooks and budget.
A spec with errors is reported and the previous build stays in use.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

from harnessc.compiler.render import compile as compile_specs
from harnessc.compiler.render import output_name
from harnessc.spec import LoadedSpec, format_diagnostics, has_errors, load_spec

__all__ = ["LiveAgent", "load_module", "run_dev"]


def load_module(text: str, name: str, file: Path) -> types.ModuleType:
    """Execute module ``text`` as module ``name`` whose ``__file__`` is ``file``."""
    module = types.ModuleType(name)
    module.__file__ = str(file)
    code = compile(text, str(file), "exec")
    sys.modules[name] = module
    try:
        exec(code, module.__dict__)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


class LiveAgent:
    """A spec compiled in memory; ``reload()`` recompiles it when its bytes changed."""

    def __init__(self, spec_path: str, out_dir: str, err: TextIO | None = None) -> None:
        self.spec_path = spec_path
        self.out_dir = Path(out_dir).resolve()
        self.err = err or sys.stderr
        self.module: types.ModuleType | None = None
        self.digest: str | None = None
        self.loaded: LoadedSpec | None = None

    def load(self) -> bool:
        """Compile and execute the spec; False (diagnostics printed) when it has errors."""
        loaded = load_spec(self.spec_path, self.spec_path)
        text = format_diagnostics(loaded.diagnostics)
        if text:
            self.err.write(text)
        self.digest = loaded.sha256
        if has_errors(loaded.diagnostics) or loaded.spec is None:
            return False
        name = output_name(loaded.spec)
        source = compile_specs(loaded, self.out_dir)[name]
        self.module = load_module(source, loaded.spec.module, self.out_dir / name)
        self.loaded = loaded
        return True

    def changed(self) -> bool:
        try:
            raw = Path(self.spec_path).read_bytes()
        except OSError:
            return False
        return hashlib.sha256(raw).hexdigest() != self.digest

    def build_options(self, *, session: Any = None, cwd: str | None = None) -> Any:
        """The current module's ``build_options`` (what run_cli and the REPL call)."""
        assert self.module is not None
        return self.module.build_options(session=session, cwd=cwd)

    @property
    def agent_name(self) -> str:
        assert self.module is not None
        return str(self.module.AGENT_NAME)

    @property
    def session_dir(self) -> Any:
        assert self.module is not None
        return self.module.SESSIONS_DIR


def run_dev(spec_path: str, argv: list[str], out_dir: str) -> int:
    """``harnessc dev``: the interactive agent, recompiled between turns."""
    live = LiveAgent(spec_path, out_dir)
    if not live.load():
        sys.stderr.write(f"harnessc: {spec_path} has errors; not running\n")
        return 1
    from harnessc.runtime.cli import run_cli

    args = ["--interactive", "--watch", *argv]
    with _dev_repl(live):
        return run_cli(
            live.build_options, args, agent_name=live.agent_name, session_dir=live.session_dir
        )


@contextlib.contextmanager
def _dev_repl(live: LiveAgent) -> Iterator[None]:
    """Let run_cli's interactive mode use the REPL below for this call."""
    from harnessc.runtime import cli_repl

    def run_dev_repl(cli: Any, harness: Any, prompt: str | None) -> int:
        repl = _dev_repl_class()(cli, harness)
        repl.live = live
        with cli_repl._terminal_restored():
            return asyncio.run(repl.main(prompt))

    original = cli_repl.run_repl
    cli_repl.run_repl = run_dev_repl
    try:
        yield
    finally:
        cli_repl.run_repl = original


def _dev_repl_class() -> type[Any]:
    from harnessc.runtime.cli_repl import Repl

    class DevRepl(Repl):  # type: ignore[misc]
        """The runtime's REPL, plus a spec check before every line handled."""

        live: LiveAgent

        async def handle(self, text: str) -> None:
            if self.live.changed():
                await self.reload_spec()
            await super().handle(text)

        async def reload_spec(self) -> None:
            self.note(f"[dev] {self.live.spec_path} changed: recompiling")
            if not self.live.load():
                self.note("[dev] the spec has errors (above); keeping the previous build")
                return
            old = self.harness
            session = old.session
            options = self.cli.build_options(session=session, cwd=self.cli.cwd)
            if options.session is not session:
                options.session = session
            self.cli.apply_overrides(options)
            if old.options.provider is not None and options.provider is None:
                options.provider = old.options.provider
            from harnessc.runtime.harness import AgentHarness

            harness = AgentHarness(options)
            watcher = getattr(old, "_watcher", None)
            if watcher is not None:  # stop the old resource watcher, keep the session open
                await watcher.stop()
                old._watcher = None
            self._unsubscribe()
            self.harness = harness
            self._unsubscribe = harness.subscribe(self.printer)
            await self.cli.prepare(harness)
            self.note(f"[dev] rebuilt; session {session.id[:8]} continues")

    return DevRepl
