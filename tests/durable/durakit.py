"""Helpers of the durable-run tests: an agent module with ``durable:`` wiring, driven by a
local protocol server whose replies depend only on the conversation so far (so any
worker, in any order, gets the same script), and a side-effect file counting tool runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harnessc.testing import (
    ProtocolServer,
    RecordedRequest,
    ScriptedResponse,
    openai_events,
    openai_tool_call_events,
)

ROOT = Path(__file__).resolve().parents[2]

AGENT_SOURCE = textwrap.dedent(
    '''
    """A durable test agent: one scripted model, a tool with a side effect, an external tool."""

    import asyncio
    import os
    import sys

    from harnessc.runtime import AgentHarnessOptions, Model, env
    from harnessc.runtime import run_durable_cli
    from harnessc.runtime.durable import DurableConfig
    from harnessc.runtime.session import Session
    from harnessc.runtime.tools import ExternalTool, Tool, text_result

    SESSIONS_DIR = os.environ.get("AGENT_SESSIONS") or None


    async def _work(call_id, params, signal, on_update, context):
        with open(os.environ["SIDE_EFFECTS"], "a") as f:
            f.write(f"{os.getpid()} start {call_id}\\n")
        await asyncio.sleep(float(os.environ.get("TOOL_SLEEP_S", "0")))
        with open(os.environ["SIDE_EFFECTS"], "a") as f:
            f.write(f"{os.getpid()} end {call_id}\\n")
        return text_result("did " + str(params.get("step")))


    def build_options(*, session=None, cwd=None):
        from harnessc.runtime import Budget
        from harnessc.runtime.resources import load_resources

        if session is None:
            session = Session()
        resources = os.environ.get("RESOURCES_DIR")
        wall = os.environ.get("WALL_CLOCK_S")
        limits = {"wall_clock_s": float(wall)} if wall else {}
        for name in ("turns", "tool_calls"):
            if os.environ.get("BUDGET_" + name.upper()):
                limits[name] = int(os.environ["BUDGET_" + name.upper()])
        hooks, extensions = [], []
        if os.environ.get("ASK_TOOLS"):  # a permission rule: these tools are asked for
            from harnessc.runtime.permissions.gate import permission_hook

            hooks.append(permission_hook({"ask": os.environ["ASK_TOOLS"].split(",")}))
        if os.environ.get("TICKETS_SERVER"):  # a real stdio MCP server
            from harnessc.runtime.mcp import McpServerConfig, McpToolset

            server = McpServerConfig(name="tickets", command=sys.executable,
                                     args=[os.environ["TICKETS_SERVER"]],
                                     env={"TICKETS_LOG": os.environ["TICKETS_LOG"]})
            extensions.append(McpToolset([server]))
        if os.environ.get("SUBAGENT"):  # a sub-agent on these options: work and the MCP tool
            from harnessc.runtime.agent.subagents import SubAgent, SubAgents

            turns = os.environ.get("SUBAGENT_TURNS")  # its own limit (agents.helper.budget)
            helper = SubAgent(name="helper", description="Does work.",
                              system_prompt="You are a helper.",
                              tools=("work", "mcp__tickets__create"),
                              budget=Budget(turns=int(turns)) if turns else None)
            parallel = os.environ.get("SUBAGENT_PARALLEL")
            extensions.append(SubAgents([helper], agent="dtester",
                                        max_parallel=int(parallel) if parallel else None))
        tools = []
        sandbox = None
        if os.environ.get("BASH_SANDBOX"):  # bash, in a sandbox hiding .env
            from harnessc.runtime.sandbox import SandboxPolicy
            from harnessc.runtime.tools import create_bash_tool

            tools.append(create_bash_tool(timeout_s=30))
            sandbox = SandboxPolicy("on", unreadable=["./.env"])
        return AgentHarnessOptions(
            sandbox=sandbox,
            budget=Budget(**limits) if limits else None,
            hooks=hooks,
            extensions=extensions,
            resources=load_resources(
                skills=[os.path.join(resources, "skills")],
                prompt_templates=[os.path.join(resources, "templates")],
            ) if resources else None,
            session=session,
            models={"main": Model(id="test-model", api="openai-completions",
                                  base_url=env("TEST_BASE_URL"), api_key_env="TEST_API_KEY")},
            model="main",
            system_prompt="You are a durable test agent.",
            tools=[
                Tool(name="work", description="Do one step of work.",
                     parameters={"type": "object", "properties": {"step": {"type": "integer"}}},
                     run=_work),
                ExternalTool(name="approve", description="Ask a human.",
                             parameters={"type": "object", "properties": {}}),
                *tools,
            ],
        )


    def durable_config():
        return DurableConfig(
            database_url=env("DURABLE_URL"),
            queue="dtest",
            concurrency=int(env("DURABLE_CONCURRENCY", "4")),
            lease_s=float(env("DURABLE_LEASE_S", "2")),
            interrupted_tools=env("DURABLE_INTERRUPTED", "fail"),
        )


    def main(argv=None):
        return run_durable_cli(build_options, argv, agent_name="dtester",
                               session_dir=SESSIONS_DIR, durable=durable_config)


    if __name__ == "__main__":
        raise SystemExit(main())
    '''
)


def scripted(request: RecordedRequest) -> ScriptedResponse:
    """The reply to a conversation: prompt "steps N [approve]" calls ``work`` N times,
    one call per reply (then ``approve`` when asked), then answers "finished N";
    "mcp N [approve]" calls the MCP tool ``create`` instead of ``work``."""
    body = request.json
    messages = body["messages"]
    prompt = next(m for m in messages if m["role"] == "user")["content"]
    if isinstance(prompt, list):
        prompt = "".join(p.get("text", "") for p in prompt)
    words = str(prompt).split()
    if words[:1] == ["bash"]:  # "bash COMMAND": one bash call, then its result as the answer
        results = [m for m in messages if m["role"] == "tool"]
        if results:
            return ScriptedResponse.sse(openai_events([f"bash said: {results[0]['content']}"]))
        command = json.dumps({"command": str(prompt).split(" ", 1)[1]})
        return ScriptedResponse.sse(openai_tool_call_events([("call_bash", "bash", command)]))
    if words[:1] == ["mix"]:
        return _mixed(words[1].split(","), words[2], messages)
    if words[:1] == ["sub"]:
        return _sub(words[1], messages)
    steps = int(words[1]) if len(words) > 1 and words[0] in ("steps", "mcp") else 0
    results = [m for m in messages if m["role"] == "tool"]
    tag = words[-1] if words else ""
    if len(results) < steps:
        n = len(results) + 1
        if words[0] == "mcp":  # "mcp N ...": the MCP server's tool creates ticket n
            call = (f"call_{tag}_{n}", "mcp__tickets__create", json.dumps({"title": f"t{n}"}))
        else:
            call = (f"call_{tag}_{n}", "work", json.dumps({"step": n}))
        return ScriptedResponse.sse(openai_tool_call_events([call]))
    if "approve" in words and len(results) == steps:
        return ScriptedResponse.sse(openai_tool_call_events([(f"ask_{tag}", "approve", "{}")]))
    return ScriptedResponse.sse(openai_events([f"finished {steps} {tag}"]))


def _mixed(plan: list[str], tag: str, messages: list[Any]) -> ScriptedResponse:
    """Prompt "mix w,m,a,s TAG": one call per reply, in the plan's order: ``w`` the local
    tool ``work``, ``m`` the MCP server's ``create``, ``a`` the external ``approve``, ``s``
    a hand-over to the sub-agent ``helper`` (prompt "sub TAGsN"); then "finished mix TAG"."""
    n = sum(1 for m in messages if m["role"] == "tool")
    if n >= len(plan):
        return ScriptedResponse.sse(openai_events([f"finished mix {tag}"]))
    kind = plan[n]
    if kind == "m":
        call = (f"mcp_{tag}_{n}", "mcp__tickets__create", json.dumps({"title": f"{tag}{n}"}))
    elif kind == "a":
        call = (f"ask_{tag}_{n}", "approve", "{}")
    elif kind == "s":
        handover = {
            "subagent_type": "helper",
            "description": "sub work",
            "prompt": f"sub {tag}s{n}",
        }
        call = (f"task_{tag}_{n}", "task", json.dumps(handover))
    else:
        call = (f"call_{tag}_{n}", "work", json.dumps({"step": n}))
    return ScriptedResponse.sse(openai_tool_call_events([call]))


def _sub(name: str, messages: list[Any]) -> ScriptedResponse:
    """The sub-agent's prompt "sub NAME": ``work`` (call ``call_NAME_0``), then the MCP
    ``create`` (ticket NAME1), then "finished sub NAME"."""
    n = sum(1 for m in messages if m["role"] == "tool")
    if n == 0:
        call = (f"call_{name}_0", "work", json.dumps({"step": 0}))
    elif n == 1:
        call = (f"mcp_{name}_1", "mcp__tickets__create", json.dumps({"title": f"{name}1"}))
    else:
        return ScriptedResponse.sse(openai_events([f"finished sub {name}"]))
    return ScriptedResponse.sse(openai_tool_call_events([call]))


@dataclass
class DurableAgent:
    path: Path
    workdir: Path
    side_effects: Path
    env: dict[str, str]
    workers: list[subprocess.Popen[str]] = field(default_factory=list)

    def run(
        self, *args: str, timeout: float = 60, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, str(self.path), *args],
            capture_output=True,
            text=True,
            env={**self.env, **(env or {})},
            cwd=self.workdir,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )

    def client(self, *args: str) -> tuple[int, str, str]:
        """A client verb (--runs, --follow, ...) run in this process: no executor starts
        here, and no interpreter start-up per call."""
        import io

        from harnessc.runtime import run_durable_cli
        from harnessc.runtime.durable import DurableConfig

        out, err = io.StringIO(), io.StringIO()
        config = DurableConfig(database_url=self.env["DURABLE_URL"], queue="dtest")
        code = run_durable_cli(
            _no_agent,
            [*args, "--cwd", str(self.workdir)],
            agent_name="dtester",
            durable=lambda: config,
            stdout=out,
            stderr=err,
        )
        return code, out.getvalue(), err.getvalue()

    def worker(
        self, worker_id: str, *extra: str, env: dict[str, str] | None = None
    ) -> subprocess.Popen[str]:
        proc = subprocess.Popen(
            [
                sys.executable,
                str(self.path),
                "--worker",
                "--worker-id",
                worker_id,
                "--drain-s",
                "2",
                *extra,
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env={**self.env, **(env or {})},
            cwd=self.workdir,
            stdin=subprocess.DEVNULL,
        )
        self.workers.append(proc)
        return proc

    def stop_workers(self) -> None:
        for proc in self.workers:
            if proc.poll() is None:
                proc.kill()
            proc.wait(timeout=30)
            if proc.stderr is not None:
                proc.stderr.close()
        self.workers.clear()

    def executions(self) -> dict[str, int]:
        """Tool call id -> completed executions, from the side-effect file."""
        counts: dict[str, int] = {}
        if self.side_effects.exists():
            for line in self.side_effects.read_text().splitlines():
                _, what, call_id = line.split()
                if what == "end":
                    counts[call_id] = counts.get(call_id, 0) + 1
        return counts


def _no_agent(**_: Any) -> Any:
    raise AssertionError("a client must never build the agent")


def make_agent(
    tmp_path: Path, server: ProtocolServer, database_url: str, sessions: bool = True
) -> DurableAgent:
    path = tmp_path / "dtester.py"
    path.write_text(AGENT_SOURCE)
    workdir = tmp_path / "work"
    workdir.mkdir()
    env: dict[str, Any] = {
        k: v
        for k, v in os.environ.items()
        if not k.endswith("_API_KEY") and not k.startswith("DURABLE_")
    }
    env.update(
        TEST_BASE_URL=f"{server.url}/v1",
        TEST_API_KEY="sk-durable-test",
        DURABLE_URL=database_url,
        SIDE_EFFECTS=str(tmp_path / "side-effects.log"),
        PYTHONDONTWRITEBYTECODE="1",
        # the agent imports this checkout's harnessc, whatever is installed
        PYTHONPATH=os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p),
    )
    if sessions:
        env["AGENT_SESSIONS"] = str(tmp_path / "sessions")
    return DurableAgent(
        path=path, workdir=workdir, side_effects=tmp_path / "side-effects.log", env=env
    )
