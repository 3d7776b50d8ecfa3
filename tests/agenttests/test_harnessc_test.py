"""``harnessc test``: cases recorded with --record against the local protocol server,
then replayed offline (passing, failing with a diff, stale after a prompt change), with
--junit read back by the standard library's XML parser.

One project and one server for the module; the steps build on each other in order.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from harnessc.agenttests.expect import subset
from harnessc.testing import (
    ProtocolServer,
    ScriptedResponse,
    openai_events,
    openai_tool_call_events,
)

KEY_ENV = "AGENTTESTS_KEY"
SPEC = """\
version: 1
name: review
models:
  m: {{provider: openai, id: test-model, base_url: "{url}/v1", api_key_env: {key}}}
system_prompt: You review plans.
tools:
  - read
  - external: {{name: ask_user, description: Ask the user a question}}
output:
  schema:
    type: object
    properties:
      verdict: {{type: string, enum: [approve, reject]}}
    required: [verdict]
"""
TESTS = """\
agent: review.yaml
cases:
  - name: approves a small fix
    prompt: review the plan in plan.md
    files: {plan.md: "rename a variable"}
    cassette: cassettes/approves.jsonl
    answers: {ask_user: "yes, go on"}
    expect:
      output: {verdict: approve}
      tools_called: [read, final_result]
      tools_not_called: [bash]
      max_turns: 3
      files: {plan.md: "rename a variable"}
  - name: rejects a risky plan
    prompt: review the plan in plan.md
    files: {plan.md: "drop the database"}
    cassette: cassettes/rejects.jsonl
    expect:
      output: {verdict: reject}
"""

WRITER = """\
version: 1
name: writer
models:
  m: {{provider: openai, id: test-model, base_url: "{url}/v1", api_key_env: {key}}}
tools: [write]
permissions: {{ask: [Write]}}
"""
WRITER_TESTS = """\
agent: writer.yaml
cases:
  - name: writes the note once allowed
    prompt: write a note
    cassette: cassettes/writes.jsonl
    approvals: {write: allow}
    expect:
      tools_called: [write]
      final_text_matches: "(?i)written"
      files: {note.md: "hello", other.md: null}
  - name: an unanswered ask fails the case
    prompt: write a note
    cassette: cassettes/asks.jsonl
"""


def _call(call_id: str, name: str, args: dict[str, object]) -> ScriptedResponse:
    return ScriptedResponse.sse(openai_tool_call_events([(call_id, name, json.dumps(args))]))


@dataclass
class Project:
    root: Path
    server: ProtocolServer

    def harnessc(self, *args: str) -> subprocess.CompletedProcess[str]:
        repo = str(Path(__file__).resolve().parents[2])
        path = os.environ.get("PYTHONPATH", "")
        return subprocess.run(
            [sys.executable, "-c", "from harnessc.cli import main; main()", "test", *args],
            capture_output=True,
            text=True,
            cwd=self.root,
            env={
                **os.environ,
                KEY_ENV: "sk-agenttests",
                "PYTHONPATH": repo + (os.pathsep + path if path else ""),
            },
            timeout=120,
        )


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Project]:
    root = tmp_path_factory.mktemp("agenttests")
    with ProtocolServer() as server:
        (root / "review.yaml").write_text(SPEC.format(url=server.url, key=KEY_ENV))
        (root / "review.tests.yaml").write_text(TESTS)
        yield Project(root, server)


def test_record_writes_cassettes_from_the_real_model(project: Project) -> None:
    server = project.server
    server.enqueue(
        _call("c1", "read", {"path": "plan.md"}),
        _call("c2", "ask_user", {"question": "approve?"}),
        _call("c3", "final_result", {"verdict": "approve"}),
        _call("c4", "final_result", {"verdict": "approve"}),  # the second case
    )
    recorded = project.harnessc("--record", "-j", "1", "review.tests.yaml")
    assert len(server.requests) == 4
    second = server.requests[1].json["messages"]
    assert "rename a variable" in json.dumps(second)  # read ran in the case's workspace
    assert recorded.returncode == 1, recorded.stdout + recorded.stderr  # the reject case
    assert "approves a small fix" in recorded.stdout and "pass (recorded)" in recorded.stdout
    cassette = project.root / "cassettes" / "approves.jsonl"
    lines = [json.loads(line) for line in cassette.read_text().splitlines()]
    assert [line["type"] for line in lines].count("message") == 3
    assert lines[1]["request"]["system_prompt"].startswith("You review plans.")


def test_replay_runs_offline_and_reports_the_first_mismatch_with_a_diff(
    project: Project,
) -> None:
    project.server.reset()
    report = project.root / "report.xml"
    replayed = project.harnessc(".", "--junit", str(report))
    assert project.server.requests == []  # no network: the cassettes answer
    assert replayed.returncode == 1
    lines = replayed.stdout.splitlines()
    passed = next(line for line in lines if "approves a small fix" in line)
    failed = next(line for line in lines if "rejects a risky plan" in line)
    assert " pass " in passed and "  3  " in passed  # 3 turns
    assert "FAIL" in failed and "the output does not match" in failed
    assert '-  "verdict": "reject"' in replayed.stdout
    assert '+  "verdict": "approve"' in replayed.stdout
    assert "1 passed, 1 failed" in replayed.stdout
    suites = ET.parse(report).getroot()
    assert suites.get("tests") == "2" and suites.get("failures") == "1"
    cases = {c.get("name"): c for c in suites.iter("testcase")}
    assert cases["approves a small fix"].find("failure") is None
    failure = cases["rejects a risky plan"].find("failure")
    assert failure is not None and failure.get("message") == "the output does not match"


def test_a_changed_prompt_makes_the_cassette_stale(project: Project) -> None:
    spec = project.root / "review.yaml"
    spec.write_text(spec.read_text().replace("You review plans.", "You review plans, briefly."))
    try:
        stale = project.harnessc("review.tests.yaml")
    finally:
        spec.write_text(spec.read_text().replace(", briefly.", "."))
    assert stale.returncode == 1
    assert "stale cassette: request #1 differs: the system prompt changed" in stale.stdout
    assert "--record" in stale.stdout


def test_a_bad_tests_file_is_named_without_a_traceback(project: Project) -> None:
    bad = project.root / "broken.tests.yaml"
    bad.write_text(
        "agent: review.yaml\ncases:\n  - name: x\n    prompt: y\n    expect: {turns: 3}\n"
    )
    try:
        result = project.harnessc("broken.tests.yaml")
    finally:
        bad.unlink()
    assert result.returncode == 1
    assert "broken.tests.yaml: cases.0.cassette: Field required" in result.stderr
    assert "cases.0.expect.turns: Extra inputs are not permitted" in result.stderr
    assert "Traceback" not in result.stderr


def test_approvals_answer_permission_asks_and_files_are_checked(project: Project) -> None:
    root, server = project.root, project.server
    (root / "writer.yaml").write_text(WRITER.format(url=server.url, key=KEY_ENV))
    (root / "writer.tests.yaml").write_text(WRITER_TESTS)
    project.server.reset()
    project.server.enqueue(
        _call("w1", "write", {"path": "note.md", "content": "hello"}),
        ScriptedResponse.sse(openai_events(["Note written."])),
        _call("w1", "write", {"path": "note.md", "content": "hello"}),  # the second case
    )
    recorded = project.harnessc("--record", "-j", "1", "writer.tests.yaml")
    allowed = next(line for line in recorded.stdout.splitlines() if "once allowed" in line)
    assert "pass (recorded)" in allowed, recorded.stdout
    assert (root / "cassettes" / "asks.jsonl").is_file()
    project.server.reset()
    replayed = project.harnessc("writer.tests.yaml")
    assert project.server.requests == []
    assert replayed.returncode == 1
    lines = replayed.stdout.splitlines()
    allowed = next(line for line in lines if "writes the note once allowed" in line)
    assert " pass " in allowed, replayed.stdout
    unanswered = next(line for line in lines if "an unanswered ask fails" in line)
    assert "FAIL" in unanswered and "the run asks to run write: give approvals" in unanswered


def test_the_scaffolded_tests_file_loads(tmp_path: Path) -> None:
    from harnessc.agenttests import load_test_file
    from harnessc.compiler.scaffold import scaffold_files

    files = scaffold_files("helper")
    (tmp_path / "helper.tests.yaml").write_text(files["helper.tests.yaml"])
    loaded = load_test_file(tmp_path / "helper.tests.yaml")
    assert loaded.agent == "helper.yaml" and loaded.cases[0].expect.tools_called == ["ls"]


def test_subset_matching() -> None:
    assert subset({"a": 1}, {"a": 1, "b": 2})
    assert subset({"a": [{"x": 1}]}, {"a": [{"x": 1, "y": 2}]})
    assert not subset({"a": [1]}, {"a": [1, 2]})
    assert not subset({"a": True}, {"a": 1})
    assert subset({"a": 1}, {"a": 1.0})


def test_a_folder_with_a_tests_file_beside_its_spec_still_builds(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from harnessc.cli import cli

    runner = CliRunner()
    agents = tmp_path / "agents"
    created = runner.invoke(cli, ["new", "helper", "--dir", str(agents)])
    assert created.exit_code == 0, created.output
    assert (agents / "helper.tests.yaml").is_file()
    checked = runner.invoke(cli, ["check", str(agents)])
    assert checked.exit_code == 0, checked.output
    assert "helper.tests.yaml" not in checked.output


@pytest.mark.parametrize("how", ["variable", "option"])
def test_record_goes_to_the_base_url_of_the_command_line_without_a_key(
    tmp_path: Path, how: str
) -> None:
    """The scaffolded demo test, recorded against the demo model as `harnessc new`
    says: $HARNESSC_BASE_URL (or --base-url) points every model there, and a server on
    this machine needs no key; the replay then passes offline."""
    from harnessc.testing.demo import serve

    env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL"))}
    repo = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = repo + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")

    def harnessc(*args: str, **more: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-c", "from harnessc.cli import main; main()", *args],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            env={**env, **more},
            timeout=120,
        )

    created = harnessc("new", "demo")
    assert "harnessc test --record agents/demo.tests.yaml" in created.stdout
    server = serve(port=0)
    try:
        url = f"{server.url}/v1"
        if how == "variable":
            recorded = harnessc("test", "--record", "agents/demo.tests.yaml", HARNESSC_BASE_URL=url)
        else:
            recorded = harnessc("test", "--record", "--base-url", url, "agents/demo.tests.yaml")
        assert recorded.returncode == 0, recorded.stdout + recorded.stderr
        assert "pass (recorded)" in recorded.stdout
        assert "authorization" not in {k for r in server.requests for k in r.headers}
    finally:
        server.stop()
    replayed = harnessc("test", "agents/demo.tests.yaml")
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    assert "1 passed" in replayed.stdout


@pytest.mark.parametrize(
    ("where", "value"),
    [
        ("expect.files", "{/etc/hostname: x}"),
        ("expect.files", "{../outside.txt: x}"),
        ("expect.files", "{'a/../../outside.txt': null}"),
        ("cassette", "/etc/hostname"),
        ("cassette", "../outside.jsonl"),
        ("cassette", "cassettes/../../outside.jsonl"),
    ],
)
def test_paths_in_a_tests_file_stay_inside_its_folder(
    tmp_path: Path, where: str, value: str
) -> None:
    """A tests file from a pull request cannot make `harnessc test` read (and print in
    its diff and JUnit file) a file outside the case's workspace, nor take or write a
    cassette outside the tests file's folder."""
    from harnessc.agenttests import load_test_file
    from harnessc.agenttests.cases import TestFileError

    cassette = value if where == "cassette" else "c.jsonl"
    expect = f"\n    expect: {{files: {value}}}" if where == "expect.files" else ""
    path = tmp_path / "a.tests.yaml"
    path.write_text(
        f"agent: a.yaml\ncases:\n  - name: n\n    prompt: p\n    cassette: {cassette}{expect}\n"
    )
    with pytest.raises(TestFileError, match="inside"):
        load_test_file(path)


def test_expected_files_are_not_read_through_a_link_out_of_the_workspace(tmp_path: Path) -> None:
    from harnessc.agenttests.cases import Expect
    from harnessc.agenttests.expect import first_mismatch

    secret = tmp_path / "credentials"
    secret.write_text("aws_secret=SHOULD-NOT-BE-SHOWN")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "copy.txt").symlink_to(secret)
    outcome = {"status": "done", "tools_called": [], "turns": 1}
    mismatch = first_mismatch(Expect(files={"copy.txt": "x"}), outcome, workspace)
    assert mismatch is not None
    assert "outside the workspace" in mismatch.message
    assert "SHOULD-NOT-BE-SHOWN" not in mismatch.message + mismatch.diff


def test_a_cassette_link_out_of_the_folder_fails_its_case(tmp_path: Path) -> None:
    from harnessc.agenttests import load_test_file
    from harnessc.agenttests.cases import TestFileError

    outside = tmp_path / "outside"
    outside.mkdir()
    folder = tmp_path / "tests"
    folder.mkdir()
    (folder / "cassettes").symlink_to(outside)
    path = folder / "a.tests.yaml"
    path.write_text(
        "agent: a.yaml\ncases:\n  - name: n\n    prompt: p\n    cassette: cassettes/c.jsonl\n"
    )
    loaded = load_test_file(path)
    with pytest.raises(TestFileError, match="leads outside the tests file's folder"):
        loaded.cassette_path(loaded.cases[0])
