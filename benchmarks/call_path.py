"""How many harnessc modules a reader walks through to follow one prompt, or one model request.

Two traces, each against the local protocol server (``harnessc.testing.ProtocolServer``)
with scripted OpenAI-compatible replies:

- ``prompt``: a one-shot run of an agent with the ``read`` tool (``run_cli`` in this
  process, ``--json``); the model asks to read a file, then answers. Traced from the
  first call of ``AgentHarness.prompt`` until it returns the run's result.
- ``request``: one streamed request through the provider layer
  (``OpenAICompletionsProvider.stream``), a reply with text and a tool call, from the
  first call into the provider until the stream's last event is read.

The reading path is what a reader meets who follows the calls in the order they happen
and reads every function once: the first call of each harnessc function (code object),
in time order, on any thread. Its modules, consecutive ones folded, are the *stays*; a
stay in a module the path already left is a *return*. A module "entered twice" has two
stays. Calls into a module outside the scope are not followed (``--scope``: the turn's
package for ``prompt``, the provider package for ``request``; ``--all`` counts every
harnessc module).

    python benchmarks/call_path.py [prompt|request|both] [--scope PREFIX ...] [--all] [--path]

Prints, per trace: the modules entered, the stays, the returns, the most stays of one
module, the modules the run goes *through* (those on the call stack when the request
reaches the model and when a tool runs; the others are calls that return first), and
(``--path``) the path itself, one stay a line.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import json
import sys
import tempfile
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from types import CodeType, FrameType
from typing import Any

from harnessc.testing import (
    ProtocolServer,
    ScriptedResponse,
    openai_events,
    openai_tool_call_events,
)

PACKAGE = "harnessc.runtime."
SCOPES = {
    "prompt": ("harnessc.runtime.agent.",),
    "request": ("harnessc.runtime.providers.",),
}


class Recorder:
    """The first call of every harnessc function while it is on, in time order."""

    def __init__(self) -> None:
        self.on = False
        self.first: list[tuple[str, str]] = []  # (module, qualified name)
        # the harnessc modules on the stack when a request goes to the model (a
        # provider's ``stream``) and when a tool runs (its ``execute``)
        self.stacks: list[list[str]] = []
        self._seen: set[CodeType] = set()
        self._lock = threading.Lock()

    def profile(self, frame: FrameType, event: str, arg: Any) -> None:
        if event != "call" or not self.on:
            return
        code = frame.f_code
        if code in self._seen:
            return
        module = frame.f_globals.get("__name__", "")
        if not module.startswith(PACKAGE):
            return
        with self._lock:
            if code not in self._seen:
                self._seen.add(code)
                self.first.append((module, code.co_qualname))
                if _reaches(module, code.co_qualname):
                    self.stacks.append(_stack(frame.f_back))

    def definitions(self) -> list[tuple[str, str]]:
        """The first use of each top-level definition (a class, a function): a reader
        who opens a class reads its methods, and a function its inner functions."""
        seen: set[tuple[str, str]] = set()
        out: list[tuple[str, str]] = []
        for module, name in self.first:
            key = (module, name.split(".", 1)[0])
            if key not in seen:
                seen.add(key)
                out.append(key)
        return out

    @contextlib.contextmanager
    def installed(self) -> Iterator[None]:
        threading.setprofile(self.profile)
        sys.setprofile(self.profile)
        try:
            yield
        finally:
            sys.setprofile(None)
            threading.setprofile(None)  # type: ignore[arg-type]


def _reaches(module: str, name: str) -> bool:
    """A request to the model or a tool's run."""
    last = name.rsplit(".", 1)[-1]
    if module.startswith(PACKAGE + "providers."):
        return last == "stream"
    return module.startswith(PACKAGE + "tools.") and last == "execute"


def _stack(frame: FrameType | None) -> list[str]:
    out: list[str] = []
    while frame is not None:
        module = frame.f_globals.get("__name__", "")
        if module.startswith(PACKAGE) and module not in out:
            out.append(module)
        frame = frame.f_back
    return out


def through(stacks: list[list[str]], keep: Callable[[str], bool]) -> list[str]:
    """The modules a prompt goes *through*: those of the scope on the call stack when it
    reaches the model (a provider's ``stream``) or a tool (its ``execute``); what else
    the path enters are calls that return before either is reached (the run's
    services: events, hooks, settings, budget, state)."""
    return sorted({m for stack in stacks for m in stack if keep(m)})


def stays(first: list[tuple[str, str]], keep: Callable[[str], bool]) -> list[tuple[str, list[str]]]:
    """The reading path: in-scope first calls, consecutive ones of a module folded."""
    out: list[tuple[str, list[str]]] = []
    for module, name in first:
        if not keep(module):
            continue
        if out and out[-1][0] == module:
            out[-1][1].append(name)
        else:
            out.append((module, [name]))
    return out


def report(
    title: str, path: list[tuple[str, list[str]]], show: bool, through: list[str] | None = None
) -> None:
    entries = Counter(module for module, _ in path)
    figures: dict[str, Any] = {
        "modules": len(entries),
        "stays": len(path),
        "returns": len(path) - len(entries),
        "most_stays": max(entries.values(), default=0),
        "entered_more_than_twice": sorted(m for m, n in entries.items() if n > 2),
    }
    if through is not None:
        figures["through"] = [_short(m) for m in through]
    print(f"{title}: {json.dumps(figures)}")
    by_module = ", ".join(f"{_short(m)} {n}" for m, n in entries.most_common())
    print(f"  stays by module: {by_module}")
    if show:
        for module, names in path:
            shown = ", ".join(names[:6]) + (f", ... ({len(names)})" if len(names) > 6 else "")
            print(f"    {_short(module)}: {shown}")


def _short(module: str) -> str:
    return module.removeprefix("harnessc.runtime.")


# -- the prompt: a one-shot run ---------------------------------------------------


def trace_prompt(recorder: Recorder) -> None:
    from harnessc.runtime import AgentHarness, AgentHarnessOptions, Model, run_cli
    from harnessc.runtime.session import Session
    from harnessc.runtime.tools import create_read_tool

    prompt_code = AgentHarness.prompt.__code__
    profile = recorder.profile

    def window(frame: FrameType, event: str, arg: Any) -> None:
        # on at the first call of AgentHarness.prompt, off when it returns its result
        if frame.f_code is prompt_code:
            if event == "call":
                recorder.on = True
            elif event == "return" and arg is not None and hasattr(arg, "status"):
                profile(frame, event, arg)
                recorder.on = False
                return
        profile(frame, event, arg)

    with tempfile.TemporaryDirectory() as folder, ProtocolServer() as server:
        notes = Path(folder) / "notes.txt"
        notes.write_text("the answer is 42\n")
        arguments = json.dumps({"path": str(notes)})
        server.enqueue(
            ScriptedResponse.sse(openai_tool_call_events([("call_1", "read", arguments)])),
            ScriptedResponse.sse(openai_events(["It says ", "the answer is 42."])),
        )

        def build_options(*, session: Session | None = None, cwd: str | None = None) -> Any:
            return AgentHarnessOptions(
                session=session if session is not None else Session(),
                models={"local": Model(id="m", api="openai-completions", base_url=server.url)},
                model="local",
                tools=[create_read_tool()],
            )

        out, err = io.StringIO(), io.StringIO()
        threading.setprofile(window)
        sys.setprofile(window)
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                code = run_cli(build_options, ["--json", "what do my notes say?"], agent_name="t")
        finally:
            sys.setprofile(None)
            threading.setprofile(None)  # type: ignore[arg-type]
        if code != 0 or len(server.requests) != 2:
            raise SystemExit(f"the run failed ({code}): {err.getvalue()}")


# -- one model request ------------------------------------------------------------


def trace_request(recorder: Recorder) -> None:
    from harnessc.runtime.core.messages import UserMessage
    from harnessc.runtime.core.options import Model
    from harnessc.runtime.providers.base import Context, ProviderRequest, ToolSpec
    from harnessc.runtime.providers.openai_completions import OpenAICompletionsProvider

    with ProtocolServer() as server:
        events = openai_tool_call_events(
            [("call_1", "read", json.dumps({"path": "notes.txt"}))], text=["Reading ", "it."]
        )
        # a warm-up request first: the traced one is a request on a running provider
        server.enqueue(ScriptedResponse.sse(events), ScriptedResponse.sse(events))
        model = Model(id="m", api="openai-completions", base_url=server.url)
        tool = ToolSpec("read", "Read a file.", {"type": "object", "properties": {}})

        def request() -> ProviderRequest:
            context = Context("Be brief.", [UserMessage("read my notes")], [tool])
            return ProviderRequest(model=model, context=context)

        async def one(provider: OpenAICompletionsProvider, request: ProviderRequest) -> list[str]:
            return [event.type async for event in provider.stream(request)]

        async def main() -> None:
            provider = OpenAICompletionsProvider()
            try:
                await one(provider, request())
                traced = request()  # made by the harness: not the provider's
                recorder.on = True
                seen = await one(provider, traced)
                recorder.on = False
            finally:
                await provider.aclose()
            if seen[-1] != "done":
                raise SystemExit(f"the request failed: {seen}")

        with recorder.installed():
            asyncio.run(main())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("which", nargs="?", default="both", choices=("prompt", "request", "both"))
    parser.add_argument("--scope", action="append", help="module prefix to follow")
    parser.add_argument("--all", action="store_true", help="follow every harnessc module")
    parser.add_argument("--path", action="store_true", help="print the reading path")
    args = parser.parse_args(argv)
    for which, run in (("prompt", trace_prompt), ("request", trace_request)):
        if args.which not in (which, "both"):
            continue
        recorder = Recorder()
        run(recorder)
        prefixes = tuple(args.scope or SCOPES[which])
        scope = "every harnessc module" if args.all else ", ".join(prefixes)

        def keep(module: str, prefixes: tuple[str, ...] = prefixes) -> bool:
            return args.all or module.startswith(prefixes)

        for unit, first in (("definition", recorder.definitions()), ("function", recorder.first)):
            title = f"{which}, by {unit} ({scope})"
            shown = through(recorder.stacks, keep) if unit == "definition" else None
            report(title, stays(first, keep), args.path, shown)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
