"""The key-free first run: the demo model server, the README quick start, doctor."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harnessc.testing import ProtocolServer
from harnessc.testing.demo import DemoModel, serve
from tests.sandboxing import require_sandbox


@pytest.fixture(scope="module")
def demo() -> Iterator[ProtocolServer]:
    server = serve(port=0)
    try:
        yield server
    finally:
        server.stop()


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL"))}
    env.update(PYTHONDONTWRITEBYTECODE="1", **extra)
    return env


def _harnessc(args: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", "from harnessc.cli import main; main()", *args],
        cwd=cwd,
        env=_env(**env),
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )


def test_the_quick_start_runs_an_agent_with_tools_without_a_key(
    demo: ProtocolServer, tmp_path: Path
) -> None:
    (tmp_path / "notes.txt").write_text("kiwi\n")
    assert _harnessc(["new", "demo"], tmp_path).returncode == 0
    url = f"{demo.url}/v1"
    done = _harnessc(["run", "demo", "list the files here"], tmp_path, HARNESSC_BASE_URL=url)
    assert done.returncode == 0, done.stderr
    assert "Here is what `ls` returned" in done.stdout and "notes.txt" in done.stdout
    assert "[ls] ." in done.stderr and "[usage] 2 turns, 1 tool call" in done.stderr
    read = _harnessc(["run", "demo", "--base-url", url, "read notes.txt"], tmp_path)
    assert read.returncode == 0, read.stderr
    assert "kiwi" in read.stdout
    assert "authorization" not in {k for r in demo.requests for k in r.headers}

    checked = _harnessc(["doctor", "demo"], tmp_path, HARNESSC_BASE_URL=url)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert re.search(r"ok +model 'main' \(gpt-4.1-mini\): .* answers", checked.stdout)
    assert "the endpoint lists gpt-4.1-mini" in checked.stdout


def test_doctor_names_the_missing_key_and_a_dead_endpoint(tmp_path: Path) -> None:
    assert _harnessc(["new", "demo"], tmp_path).returncode == 0
    with ProtocolServer() as dead:
        url = f"{dead.url}/v1"
    done = _harnessc(["doctor", "demo"], tmp_path, OPENAI_BASE_URL=url)
    assert done.returncode == 1
    assert "OPENAI_API_KEY is not set" in done.stdout
    assert f"nothing answers at {url} (is the server running?)" in done.stdout


def test_doctor_says_when_the_model_is_not_listed(demo: ProtocolServer, tmp_path: Path) -> None:
    assert _harnessc(["new", "demo"], tmp_path).returncode == 0
    spec = tmp_path / "agents" / "demo.yaml"
    spec.write_text(spec.read_text().replace("gpt-4.1-mini", "gpt-4.1-mimi"))
    done = _harnessc(
        ["doctor", "demo"],
        tmp_path,
        OPENAI_BASE_URL=f"{demo.url}/v1",
        OPENAI_API_KEY="sk-demo-SECRET",
    )
    assert done.returncode == 1
    assert "does not list gpt-4.1-mimi; did you mean 'gpt-4.1-mini'?" in done.stdout
    assert "sk-demo-SECRET" not in done.stdout + done.stderr


def test_python_m_harnessc_testing_starts_the_demo_server() -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "harnessc.testing", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(),
    )
    try:
        assert process.stdout is not None
        first = process.stdout.readline()
        assert first.startswith("demo model server at http://127.0.0.1:")
    finally:
        process.terminate()
        process.wait(timeout=10)
    assert process.returncode == 0


def test_the_demo_answers_in_text_when_no_tool_fits() -> None:
    from harnessc.testing import RecordedRequest

    body = b'{"messages": [{"role": "user", "content": "hello"}], "tools": []}'
    answer = DemoModel()(RecordedRequest("POST", "/v1/chat/completions", {}, body))
    text = ""
    for line in b"".join(answer.chunks).decode().splitlines():
        if line.startswith("data: {"):
            for choice in json.loads(line[6:]).get("choices") or []:
                text += choice.get("delta", {}).get("content") or ""
    assert "harnessc demo model" in text and '"keep going"' in text


@pytest.mark.parametrize(
    ("prompt", "call"),
    [
        ("read .env", ("read", {"path": ".env"})),
        ("read notes.txt.", ("read", {"path": "notes.txt"})),
        ("run echo hi && ls", ("bash", {"command": "echo hi && ls"})),
        ("write out.txt: two words", ("write", {"path": "out.txt", "content": "two words\n"})),
        (
            "replace hello with bye in out.txt",
            ("edit", {"path": "out.txt", "edits": [{"old_text": "hello", "new_text": "bye"}]}),
        ),
        ("ask me which branch", ("ask_user", {"question": "which branch"})),
        ("use the checklist skill", ("read", {"path": "/s/checklist/SKILL.md"})),
        ("keep going", ("ls", {"path": "."})),
        ('call mcp__notes__search {"query": "kiwi"}', ("mcp__notes__search", {"query": "kiwi"})),
    ],
)
def test_the_demo_plans_a_call_for_each_feature(prompt: str, call: Any) -> None:
    from harnessc.testing.demo import _plan

    tools = {"read", "ls", "grep", "bash", "write", "edit", "ask_user", "mcp__notes__search"}
    system = "<skill><name>checklist</name><location>/s/checklist/SKILL.md</location></skill>"
    assert _plan(prompt, tools, system) == call


def test_the_demo_walks_through_pauses_an_approval_and_a_budget(
    demo: ProtocolServer, tmp_path: Path
) -> None:
    assert _harnessc(["new", "demo"], tmp_path).returncode == 0
    url = f"{demo.url}/v1"
    held = _harnessc(["run", "demo", "write out.txt: hello"], tmp_path, HARNESSC_BASE_URL=url)
    assert held.returncode == 3, held.stderr
    assert "permission needed: write(out.txt)" in held.stderr
    assert not (tmp_path / "out.txt").exists()
    call = re.search(r"--approve (\S+)", held.stderr)
    assert call is not None, held.stderr
    approved = _harnessc(
        ["run", "demo", "--continue", "--approve", call.group(1)], tmp_path, HARNESSC_BASE_URL=url
    )
    assert approved.returncode == 0, approved.stderr
    assert (tmp_path / "out.txt").read_text() == "hello\n"
    assert re.search(r"\[write\] out.txt  \d", approved.stderr), approved.stderr  # its time
    looping = _harnessc(
        ["run", "demo", "--max-turns", "3", "keep going"], tmp_path, HARNESSC_BASE_URL=url
    )
    assert looping.returncode == 3, looping.stderr
    assert "budget limit hit: turns (3 of 3 used)" in looping.stderr


def _python(script: Path, prompt: str, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(script), prompt],
        cwd=cwd,
        env=_env(**env),
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )


def test_the_demo_hands_work_to_sub_agents(demo: ProtocolServer, tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("kiwi\n")
    assert _harnessc(["new", "demo"], tmp_path).returncode == 0
    built = _harnessc(["build", "agents/demo.yaml"], tmp_path)
    assert built.returncode == 0, built.stderr
    lead = tmp_path / "generated" / "demo.py"
    # HARNESSC_BASE_URL points every agent of the tree at the demo server; no key needed
    env = {"HARNESSC_BASE_URL": f"{demo.url}/v1"}

    scouted = _python(lead, "ask the scout agent to read notes.txt", tmp_path, **env)
    assert scouted.returncode == 0, scouted.stderr
    assert "> demo > scout: read notes.txt" in scouted.stderr
    assert "  [read] notes.txt" in scouted.stderr  # the sub-agent's own call, indented
    assert "Here is what `task` returned" in scouted.stdout and "kiwi" in scouted.stdout

    reported = _python(lead, "ask the reporter agent to list the files here", tmp_path, **env)
    assert reported.returncode == 0, reported.stderr
    assert "> demo > reporter: list the files here" in reported.stderr
    assert "[final_result]" in reported.stderr
    value = json.loads(re.search(r'\{"summary".*\}', reported.stdout).group(0))  # type: ignore[union-attr]
    assert value["verdict"] == "fine" and "notes.txt" in value["summary"]


def test_the_demo_answers_a_typed_agent_with_a_value_of_its_schema(
    demo: ProtocolServer, tmp_path: Path
) -> None:
    (tmp_path / "notes.txt").write_text("kiwi\n")
    assert _harnessc(["new", "demo"], tmp_path).returncode == 0
    assert _harnessc(["build", "agents/demo.yaml"], tmp_path).returncode == 0
    reporter = tmp_path / "generated" / "demo_reporter.py"
    done = _python(
        reporter,
        "list the files here: needs_work?",
        tmp_path,
        HARNESSC_BASE_URL=f"{demo.url}/v1",
    )
    assert done.returncode == 0, done.stderr
    [line] = done.stdout.splitlines()  # stdout: the value as JSON, nothing else
    value = json.loads(line)
    listed = sorted(os.listdir(tmp_path))
    assert value["files"] == len(listed)  # the lines ls returned
    assert value["verdict"] == "needs_work"  # the enum value the prompt names
    assert value["summary"].startswith("`ls` returned") and "notes.txt" in value["summary"]
    assert "[final_result]" in done.stderr


def test_the_demo_fills_a_schema_asked_for_with_response_format() -> None:
    from harnessc.testing import RecordedRequest

    schema = {
        "type": "object",
        "properties": {
            "title": {"type": "string", "maxLength": 5},
            "score": {"type": "integer", "exclusiveMinimum": 3, "maximum": 10},
            "tags": {"type": "array", "items": {"type": "string"}, "minItems": 1},
            "kind": {"enum": ["bug", "idea"]},
            "done": {"type": ["boolean", "null"]},
        },
    }
    payload = {
        "messages": [{"role": "user", "content": "hello, an idea"}],
        "response_format": {"type": "json_schema", "json_schema": {"schema": schema}},
    }
    body = json.dumps(payload).encode()
    answer = DemoModel()(RecordedRequest("POST", "/v1/chat/completions", {}, body))
    text = ""
    for line in b"".join(answer.chunks).decode().splitlines():
        if line.startswith("data: {"):
            for choice in json.loads(line[6:]).get("choices") or []:
                text += choice.get("delta", {}).get("content") or ""
    value = json.loads(text)
    assert value == {"title": "Hello", "score": 4, "tags": ["Hello"], "kind": "idea", "done": True}


def test_the_scaffolds_sandbox_blocks_cat_env_and_the_network(
    demo: ProtocolServer, tmp_path: Path
) -> None:
    """The rules let ``cat`` and ``curl`` run; the sandbox keeps .env and the network."""
    require_sandbox()
    (tmp_path / ".env").write_text("DEMO_TOKEN=dotenv-value-do-not-show\n")
    assert _harnessc(["new", "demo"], tmp_path).returncode == 0
    url = f"{demo.url}/v1"
    cat = _harnessc(["run", "demo", "run cat .env"], tmp_path, HARNESSC_BASE_URL=url)
    assert cat.returncode == 0, cat.stderr
    assert "cat: .env: Permission denied" in cat.stdout
    assert "dotenv-value" not in cat.stdout + cat.stderr
    fetch = _harnessc(
        ["run", "demo", f"run curl -sS --max-time 5 {demo.url}/v1/models"],
        tmp_path,
        HARNESSC_BASE_URL=url,
    )
    assert fetch.returncode == 0, fetch.stderr
    assert "Failed to connect" in fetch.stdout and "gpt-4.1-mini" not in fetch.stdout
    # the interactive door: the same call typed at the prompt
    typed = subprocess.run(
        [sys.executable, "-c", "from harnessc.cli import main; main()", "run", "demo", "-i"],
        cwd=tmp_path,
        env=_env(HARNESSC_BASE_URL=url),
        capture_output=True,
        text=True,
        timeout=60,
        input="run cat .env\n",
    )
    assert typed.returncode == 0, typed.stderr
    assert "cat: .env: Permission denied" in typed.stdout + typed.stderr, typed.stdout
    assert "dotenv-value" not in typed.stdout + typed.stderr
    checked = _harnessc(["doctor", "demo"], tmp_path, HARNESSC_BASE_URL=url)
    assert re.search(r"ok +sandbox on: enforced by bubblewrap", checked.stdout), checked.stdout


UNSET_URL_SPEC = """\
version: 1
name: elsewhere
models:
  main:
    provider: openai
    id: demo
    base_url: ${ELSEWHERE_BASE_URL}/v1
    api_key_env: ELSEWHERE_API_KEY
tools: [ls]
"""


def test_base_url_on_the_command_line_stands_in_for_an_unset_variable_of_the_spec(
    demo: ProtocolServer, tmp_path: Path
) -> None:
    """--base-url (or $HARNESSC_BASE_URL) replaces the spec's base_url, so the variable
    that base_url reads need not be set; without either, the run names the variable."""
    spec = tmp_path / "elsewhere.yaml"
    spec.write_text(UNSET_URL_SPEC)
    url = f"{demo.url}/v1"
    given = _harnessc(["run", str(spec), "--base-url", url, "list the files here"], tmp_path)
    assert given.returncode == 0, given.stderr
    assert "Here is what `ls` returned" in given.stdout
    exported = _harnessc(["run", str(spec), "list the files here"], tmp_path, HARNESSC_BASE_URL=url)
    assert exported.returncode == 0, exported.stderr
    assert _harnessc(["build", str(spec), "-o", "generated"], tmp_path).returncode == 0
    module = _python(tmp_path / "generated" / "elsewhere.py", "--base-url", tmp_path)
    assert module.returncode == 2  # a flag without its value; the module itself builds
    built = subprocess.run(
        [sys.executable, str(tmp_path / "generated" / "elsewhere.py"), "--base-url", url, "hi"],
        cwd=tmp_path,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert built.returncode == 0, built.stderr
    neither = _harnessc(["run", str(spec), "list the files here"], tmp_path)
    assert neither.returncode == 2
    assert "ELSEWHERE_BASE_URL is not set" in neither.stderr, neither.stderr
    assert "--base-url" in neither.stderr
    doctor = _harnessc(["doctor", str(spec)], tmp_path)
    assert doctor.returncode == 1
    assert "ELSEWHERE_BASE_URL is not set" in doctor.stdout, doctor.stdout


def test_the_notes_example_finds_its_sample_note_without_warnings(
    demo: ProtocolServer, tmp_path: Path
) -> None:
    """The README's MCP line, as a newcomer runs it with the demo model: the sample
    query finds the sample note, and nothing on stderr but the call and the usage."""
    pytest.importorskip("mcp")
    repo = Path(__file__).resolve().parents[2]
    done = _harnessc(
        ["run", str(repo / "agents" / "notes.yaml"), 'call mcp__notes__search {"query": "kiwi"}'],
        tmp_path,
        HARNESSC_BASE_URL=f"{demo.url}/v1",
    )
    assert done.returncode == 0, done.stderr
    assert "fruit.md" in done.stdout, done.stdout
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert [line.split()[0] for line in lines] == ["[mcp__notes__search]", "[usage]"], lines


def test_doctor_redacts_a_key_in_the_base_url_query_and_probes_the_right_url(
    demo: ProtocolServer, tmp_path: Path
) -> None:
    """A key held in base_url's query string (`?key=${VAR}`, as some gateways take it) is
    never printed, and the probe asks {path}/models?key=..., not ...?key=.../models."""
    secret = "sk-doctor-QUERY-SECRET-9876"
    spec = tmp_path / "gateway.yaml"
    spec.write_text(
        "version: 1\nname: gateway\nmodels:\n  main:\n    provider: openai\n    id: demo\n"
        f"    base_url: {demo.url}/v1?key=${{GATEWAY_KEY}}\n    api_key_env: GATEWAY_KEY\n"
    )
    before = len(demo.requests)
    done = _harnessc(["doctor", str(spec)], tmp_path, GATEWAY_KEY=secret)
    assert secret not in done.stdout + done.stderr
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"{demo.url}/v1?key=[redacted] answers" in done.stdout, done.stdout
    assert "the endpoint lists demo" in done.stdout
    [probe] = [r for r in demo.requests[before:] if r.method == "GET"]
    assert probe.path == f"/v1/models?key={secret}"


def test_a_sub_agent_whose_base_url_variable_is_unset_says_so(
    demo: ProtocolServer, tmp_path: Path
) -> None:
    (tmp_path / "sub.yaml").write_text(
        UNSET_URL_SPEC.replace("name: elsewhere", "name: sub").replace(
            "    api_key_env: ELSEWHERE_API_KEY\n", ""
        )
    )
    (tmp_path / "top.yaml").write_text(
        "version: 1\nname: top\nmodels:\n"
        f"  main: {{provider: openai, id: demo, base_url: '{demo.url}/v1'}}\n"
        "agents:\n  sub: {spec: sub.yaml, description: Lists files.}\n"
    )
    prompt = "ask the sub agent to list the files here"
    done = _harnessc(["run", str(tmp_path / "top.yaml"), prompt], tmp_path)
    assert "environment variable ELSEWHERE_BASE_URL is not set" in done.stderr, done.stderr
    given = _harnessc(
        ["run", str(tmp_path / "top.yaml"), "--base-url", f"{demo.url}/v1", prompt], tmp_path
    )
    assert given.returncode == 0, given.stderr
    assert "> top > sub: list the files here" in given.stderr and "error" not in given.stderr
