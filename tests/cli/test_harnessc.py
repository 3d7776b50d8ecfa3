"""The `harnessc` command's side of issue 17: check, list, run NAME, option hints, examples."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from harnessc.cli import cli
from harnessc.spec.yamlsource import load_yaml

REPO = Path(__file__).resolve().parents[2]

HELLO = """\
version: 1
name: hello
description: Says hello.
models:
  local:
    provider: openai
    id: llama3.2
    base_url: {base_url}
model: local
"""


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "agents").mkdir()
    monkeypatch.chdir(tmp_path)
    return tmp_path


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args))


def test_check_rejects_a_base_url_without_a_scheme(project: Path) -> None:
    spec = project / "agents" / "hello.yaml"
    spec.write_text(HELLO.format(base_url="localhost:11434/v1"))
    result = invoke("check", "agents/hello.yaml")
    assert result.exit_code == 1
    assert "agents/hello.yaml:8:" in result.stderr
    assert "base_url 'localhost:11434/v1' has no scheme: write http://localhost:11434/v1" in (
        result.stderr
    )
    spec.write_text(HELLO.format(base_url="${HELLO_URL:-localhost:11434/v1}"))
    assert invoke("check", "agents/hello.yaml").exit_code == 1
    for good in ("http://localhost:11434/v1", "${HELLO_URL}", "${HELLO_URL:-https://x.dev/v1}"):
        spec.write_text(HELLO.format(base_url=good))
        assert invoke("check", "agents/hello.yaml").exit_code == 0, good


def test_check_of_an_empty_folder_says_so(project: Path) -> None:
    result = invoke("check", "agents")
    assert result.exit_code == 1
    assert "no specs (*.yaml, *.yml) in agents: nothing checked" in result.stderr


def test_check_reports_a_tool_module_that_does_not_compile(project: Path) -> None:
    (project / "agents" / "tools.py").write_text("def shout(text: str) -> str:\n    return (\n")
    (project / "agents" / "hello.yaml").write_text(
        HELLO.format(base_url="http://localhost:11434/v1") + "tools:\n  - python: tools:shout\n"
    )
    result = invoke("check", "agents/hello.yaml")
    assert result.exit_code == 1, result.output
    assert "module 'tools' does not compile: tools.py:2:" in result.stderr
    assert "agents/hello.yaml: 1 error" in result.stdout


def test_list_shows_each_agent_its_build_state_and_description(project: Path) -> None:
    (project / "agents" / "hello.yaml").write_text(HELLO.format(base_url="http://h/v1"))
    (project / "agents" / "broken.yaml").write_text("version: 1\nname: broken\nmodels: {}\n")
    result = invoke("list")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert re.fullmatch(r"hello +not built +Says hello\.", lines[1]), lines
    assert lines[0].startswith("broken") and "has errors" in lines[0]
    assert invoke("build", "agents/hello.yaml").exit_code == 0
    assert re.fullmatch(r"hello +built +Says hello\.", invoke("list").stdout.splitlines()[1])


def test_run_finds_a_spec_by_name_and_hints_where_options_go(project: Path) -> None:
    (project / "agents" / "hello.yaml").write_text(HELLO.format(base_url="http://h/v1"))
    helped = invoke("run", "hello", "--", "--help")
    assert helped.exit_code == 0, helped.output
    assert "Run the hello agent" in helped.stdout
    missing = invoke("run", "helo")
    assert missing.exit_code == 2
    assert "did you mean 'hello'" in missing.stderr
    wrong = invoke("run", "agents/hello.yaml", "-o", "x", "hi")
    assert wrong.exit_code == 2
    assert "-o is an option of harnessc run and goes before SPEC" in wrong.stderr
    assert "harnessc run -o DIR agents/hello.yaml" in wrong.stderr


def test_every_example_model_honours_its_providers_base_url_variable() -> None:
    variables = {
        "openai": "OPENAI_BASE_URL",
        "anthropic": "ANTHROPIC_BASE_URL",
        "google": "GOOGLE_BASE_URL",
    }
    for spec in sorted((REPO / "agents").glob("*.yaml")):
        data = load_yaml(spec.read_bytes(), spec.name).data
        for key, model in data["models"].items():
            if spec.stem == "hello":
                continue  # the local-server example has its own HELLO_BASE_URL
            wanted = "${" + variables[model["provider"]] + ":-"
            assert str(model.get("base_url", "")).startswith(wanted), (spec.name, key)


def test_a_specs_permissions_compile_into_a_tool_call_hook(project: Path) -> None:
    spec = project / "agents" / "hello.yaml"
    spec.write_text(
        HELLO.format(base_url="http://localhost:1/v1")
        + "tools: [bash]\npermissions:\n  allow: ['Bash(git status)']\n"
        "  deny: ['Bash(rm -rf *)']\n  default: ask\n"
    )
    assert invoke("build", "agents/hello.yaml").exit_code == 0
    module = (project / "generated" / "hello.py").read_text()
    assert "from harnessc.runtime.permissions.gate import permission_hook" in module
    assert '"deny": ["Bash(rm -rf *)"]' in module and '"default": "ask"' in module
    spec.write_text(spec.read_text().replace("Bash(git status)", "Bash()"))
    result = invoke("check", "agents/hello.yaml")
    assert result.exit_code == 1
    assert "bad permission rule 'Bash()': empty ()" in result.stderr
