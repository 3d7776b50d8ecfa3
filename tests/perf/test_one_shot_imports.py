"""What a piped one-shot run of a generated agent imports (no timing: see benchmarks/startup.py).

``python generated/hello.py "hi"`` against the local server, in a subprocess: the reply
arrives, none of the parts a one-shot run never needs were loaded, and only the
dataclasses listed below were created (``dataclass()`` compiles three methods per class
at import: the run's vocabulary is declared as msgspec ``Struct`` classes instead, which
msgspec builds in C).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from harnessc.testing import ProtocolServer, ScriptedResponse, openai_events

REPO = Path(__file__).resolve().parents[2]

# Loaded only by the interactive mode, other wire APIs, other tools, the compiler, the
# index, durable runs and MCP: a piped one-shot run of hello.py needs none of them.
NEVER = (
    # a command line of prompt words alone is read without argparse (and its gettext)
    "argparse",
    "gettext",
    # a run's id is random bytes from os.urandom: no secrets module (and its hmac)
    "secrets",
    "hmac",
    "harnessc.runtime.cli.parser",
    # a run that does not pause never puts a pause in words
    "harnessc.runtime.cli.pause",
    # the terminal's protocols are types only
    "harnessc.runtime.cli.host",
    # a request that succeeds at once: no failure to put in words, no retry
    "harnessc.runtime.providers.hints",
    "harnessc.runtime.providers.retry",
    # a reply without tool calls: no arguments to parse, no tool result to clean
    "harnessc.runtime.providers.tool_args",
    "harnessc.runtime.tools.clean",
    # a new session: nothing to restore, no move in its tree
    "harnessc.runtime.agent.restore",
    "harnessc.runtime.agent.session_moves",
    "harnessc.compiler",
    "harnessc.spec",
    "harnessc.runtime.cli.repl",
    "prompt_toolkit",
    "harnessc.runtime.durable",
    "harnessc.runtime.mcp",
    "harnessc.runtime.extensions",
    "harnessc.runtime.session.index",
    "harnessc.runtime.session.jsonl",
    # a new session has no pause to reopen
    "harnessc.runtime.session.replay",
    # hello's window (8,192) is below the default reserve (16,384): the threshold passes at
    # every turn, but there is nothing before what the summary keeps, so none starts
    "harnessc.runtime.compaction.apply",
    "harnessc.runtime.compaction.cut_point",
    "harnessc.runtime.compaction.summarize",
    "harnessc.runtime.agent.tree_moves",
    # a reply without tool calls makes no batch: no workspace checkpoint is found or taken
    "harnessc.runtime.checkpoints.batch",
    "harnessc.runtime.checkpoints.scan",
    # an agent without output: never judges a typed answer
    "harnessc.runtime.agent.typed_result",
    "harnessc.runtime.options.typed_output",
    # context files are read at every start; skills and templates only when the spec has some
    "harnessc.runtime.resources.frontmatter",
    "harnessc.runtime.resources.skills",
    "harnessc.runtime.resources.templates",
    "harnessc.runtime.resources.watch",
    "harnessc.runtime.telemetry",
    "opentelemetry",
    "harnessc.runtime.tools.bash",
    # an agent without permissions: never loads the gate, its rules or the shell reader
    "harnessc.runtime.permissions.gate",
    "harnessc.runtime.permissions.rules",
    "harnessc.runtime.permissions.shell_rules",
    # `sandbox: auto` checks the machine when an agent that can start a program starts (hello
    # has no tool, hook or extension: no check, no bwrap child); what wraps a program loads
    # with the first
    "harnessc.runtime.sandbox.bwrap",
    "harnessc.runtime.sandbox.layout",
    "harnessc.runtime.sandbox.spawn",
    "harnessc.runtime.providers.anthropic_messages",
    "harnessc.runtime.providers.google_generative_ai",
    "harnessc.runtime.providers.replay",
    "harnessc.runtime.providers.scripted",
    "harnessc.testing",
    # an agent without tools, hooks or extensions starts no program for the model: the
    # guard that keeps its keys from children (ctypes, for prctl) is not taken
    "ctypes",
    "harnessc.runtime.processes.children",
    "jinja2",
    "pydantic",
    "sqlite3",
    "watchfiles",
    "yaml",
)

# Made with dataclass() in a one-shot run: none (the typed output's settings are a Struct
# too, their caches kept beside the fields).
DATACLASSES: set[str] = set()

PROBE = """
import dataclasses, json, runpy, sys
made = []
process_class = dataclasses._process_class
def spy(cls, *args, **kwargs):
    made.append(cls.__module__ + "." + cls.__qualname__)
    return process_class(cls, *args, **kwargs)
dataclasses._process_class = spy
sys.argv = ["hello.py", "hi"]
try:
    runpy.run_path(sys.argv_path, run_name="__main__")
except SystemExit as exc:
    code = exc.code
else:
    code = 0
sys.stderr.write("\\nMODULES " + json.dumps([code, sorted(sys.modules), made]) + "\\n")
"""


def test_a_piped_one_shot_run_loads_only_what_it_uses(tmp_path: Path) -> None:
    agent = REPO / "generated" / "hello.py"
    probe = PROBE.replace("sys.argv_path", repr(str(agent)))
    with ProtocolServer() as server:
        server.set_handler(lambda request: ScriptedResponse.sse(openai_events(["Hi", " there"])))
        env = dict(os.environ, HELLO_BASE_URL=f"{server.url}/v1", PYTHONPATH=str(REPO))
        done = subprocess.run(
            [sys.executable, "-c", probe],
            env=env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert done.stdout.strip() == "Hi there", done.stderr
    code, modules, made = json.loads(done.stderr.rsplit("MODULES ", 1)[1])
    assert code == 0
    loaded = [m for m in modules if any(m == n or m.startswith(n + ".") for n in NEVER)]
    assert loaded == []
    assert "harnessc.runtime.providers.openai_completions" in modules  # the probe is real
    harnessc_made = {name for name in made if name.startswith("harnessc.")}
    assert harnessc_made <= DATACLASSES, sorted(harnessc_made - DATACLASSES)


# What only a request needs: ``--help`` (and anything else that sends none) loads none of it.
NETWORK = (
    "aiohttp",
    "harnessc.runtime.providers.clients",
    "harnessc.runtime.providers.transport",
    "http.client",
    "urllib.request",
)


def test_help_loads_no_part_of_the_network_stack(tmp_path: Path) -> None:
    agent = REPO / "generated" / "hello.py"
    probe = PROBE.replace("sys.argv_path", repr(str(agent))).replace('"hi"]', '"--help"]')
    env = dict(os.environ, PYTHONPATH=str(REPO))
    done = subprocess.run(
        [sys.executable, "-c", probe], env=env, cwd=tmp_path, capture_output=True, text=True
    )
    assert "usage:" in done.stdout, done.stderr
    code, modules, _ = json.loads(done.stderr.rsplit("MODULES ", 1)[1])
    assert code == 0
    loaded = [m for m in modules if any(m == n or m.startswith(n + ".") for n in NETWORK)]
    assert loaded == []
    assert "harnessc.runtime.cli.main" in modules  # the probe is real
