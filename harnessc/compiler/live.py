"""Run a spec without writing its module: ``harnessc run`` and ``harnessc dev``.

The generated text is executed as a module named after the agent whose ``__file__`` is
where ``harnessc build`` would write it, so its relative paths resolve as in a build.

``dev`` runs the agent's interactive mode (``run_cli --interactive --watch``: skills
and templates hot-reload) with the runtime's REPL class swapped, for that call, for a
subclass that checks the spec before every line: when its bytes changed and it still
validates, the module is recompiled and the REPL's own session switch rebuilds the
harness around the same session (reopened from its file), so the conversation goes on
with the new models, tools, hooks, extensions and budget. A spec with errors is
reported and the previous build stays in use.
"""

from __future__ import annotations

import contextlib
import hashlib
import shlex
import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

from harnessc.compiler.render import compile as compile_specs
from harnessc.compiler.render import output_name
from harnessc.spec import LoadedSpec, format_diagnostics, has_errors, load_spec

__all__ = ["LiveAgent", "agent_prog", "load_module", "run_dev"]


def agent_prog(command: str, spec_path: str, out_dir: str | None = None) -> str:
    """The shell command that reruns ``spec_path`` through ``harnessc run|dev``.

    The agent shows it in its help and in "continue with" hints (run_cli's ``prog``),
    so a hint printed under ``harnessc run`` is a command that works. ``out_dir`` is
    given when it is not the default; options go before the spec.
    """
    words = ["harnessc", command]
    if out_dir is not None:
        words += ["-o", out_dir]
    words.append(spec_path)
    return " ".join(shlex.quote(word) for word in words)


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
        outputs = compile_specs(loaded, self.out_dir)
        for other, text in outputs.items():  # the sub-agents' modules, in memory too
            if other != name:
                from harnessc.runtime.agent.subagents import register_module

                file = self.out_dir / other
                register_module(file, load_module(text, f"harnessc_live.{file.stem}", file))
        self.module = load_module(outputs[name], loaded.spec.module, self.out_dir / name)
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

    def run(self, argv: list[str], prog: str | None = None) -> int:
        """The module's command line (what its ``main`` runs), shown as ``prog``."""
        assert self.module is not None
        session_repo = getattr(self.module, "session_repo", None)
        durable = getattr(self.module, "durable_config", None)
        if durable is not None:  # a spec with durable: runs as its generated module does
            from harnessc.runtime import run_durable_cli

            return run_durable_cli(
                self.build_options,
                argv,
                agent_name=self.agent_name,
                session_dir=self.session_dir,
                durable=durable,
                session_repo=session_repo,
                prog=prog,
            )
        from harnessc.runtime import run_cli

        return run_cli(
            self.build_options,
            argv,
            agent_name=self.agent_name,
            session_dir=self.session_dir,
            prog=prog,
            session_repo=session_repo,
        )

    @property
    def agent_name(self) -> str:
        assert self.module is not None
        return str(self.module.AGENT_NAME)

    @property
    def session_dir(self) -> Any:
        assert self.module is not None
        return self.module.SESSIONS_DIR


def run_dev(spec_path: str, argv: list[str], out_dir: str, prog: str | None = None) -> int:
    """``harnessc dev``: the interactive agent, recompiled between turns."""
    live = LiveAgent(spec_path, out_dir)
    if not live.load():
        sys.stderr.write(f"harnessc: {spec_path} has errors; not running\n")
        return 1
    from harnessc.runtime import run_cli

    args = ["--interactive", "--watch", *argv]
    with _dev_repl(live):
        return run_cli(
            live.build_options,
            args,
            agent_name=live.agent_name,
            session_dir=live.session_dir,
            prog=prog,
        )


@contextlib.contextmanager
def _dev_repl(live: LiveAgent) -> Iterator[None]:
    """Make run_cli's interactive mode use ``DevRepl`` (bound to ``live``) for this call."""
    from harnessc.runtime.cli import repl as cli_repl

    original = cli_repl.Repl

    class DevRepl(original):  # type: ignore[misc, valid-type]
        """The runtime's REPL, plus a spec check before every line it handles."""

        async def handle(self, text: str) -> None:
            if live.changed():
                await self.reload_spec()
            await super().handle(text)

        async def reload_spec(self) -> None:
            self.note(f"[dev] {live.spec_path} changed: recompiling")
            if not live.load():
                self.note("[dev] the spec has errors (above); keeping the previous build")
                return
            old = self.harness
            session = old.session
            await old.close()  # stops its resource watcher and releases the session file
            if session.path:
                from harnessc.runtime.session import JsonlSessionRepo

                session = JsonlSessionRepo(Path(session.path).parent).open(session.path)
            # The REPL's own session switch builds a harness from cli.build_options,
            # which is ``live.build_options``: the module just compiled.
            await self.switch_session(session)
            await self.cli.prepare(self.harness)  # --watch and overrides on the new harness
            self.note(f"[dev] rebuilt from the new spec; session {session.id[:8]} continues")

    setattr(cli_repl, "Repl", DevRepl)  # noqa: B010 - run_repl looks the class up here
    try:
        yield
    finally:
        setattr(cli_repl, "Repl", original)  # noqa: B010
