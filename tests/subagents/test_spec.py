"""The agents: section at build time: diagnostics with file:line:col and the compiled
module (a spec sub-agent's module is written beside the lead's)."""

from __future__ import annotations

from pathlib import Path

from harnessc.compiler import compile as compile_specs
from harnessc.spec import load_spec

from .kit import EXPLORER_MD, MODEL


def spec(name: str, extra: str = "") -> str:
    return f"version: 1\nname: {name}\ndescription: The {name}.\n{MODEL}{extra}"


def problems(path: Path) -> list[str]:
    return [d.format() for d in load_spec(path, path.name).diagnostics]


def test_a_missing_file_is_an_error_where_it_is_named(tmp_path: Path) -> None:
    lead = tmp_path / "lead.yaml"
    lead.write_text(spec("lead", "agents:\n  reviewer:\n    spec: nowhere.yaml\n"))
    assert problems(lead) == [
        "lead.yaml:12:11: error: sub-agent 'reviewer': no file 'nowhere.yaml'"
    ]


def test_a_cycle_between_specs_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "lead.yaml").write_text(
        spec("lead", "agents:\n  b: {spec: b.yaml}\nmax_depth: 5\n")
    )
    (tmp_path / "b.yaml").write_text(spec("b", "agents:\n  a: {spec: lead.yaml}\nmax_depth: 5\n"))
    found = problems(tmp_path / "lead.yaml")
    assert any(
        "b.yaml:11:13: error: sub-agent 'a': a cycle between specs (lead.yaml > b.yaml > lead.yaml)"
        in line
        for line in found
    ), found
    assert "lead.yaml:11:13: error: sub-agent 'b': b.yaml has errors" in found


def test_a_tree_deeper_than_max_depth_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "lead.yaml").write_text(spec("lead", "agents:\n  b: {spec: b.yaml}\n"))
    (tmp_path / "b.yaml").write_text(spec("b", "agents:\n  c: {spec: c.yaml}\n"))
    (tmp_path / "c.yaml").write_text(spec("c"))
    assert problems(tmp_path / "lead.yaml") == [
        "lead.yaml:11:13: error: sub-agent 'b' nests 2 levels deep, over max_depth 1 "
        "(set max_depth: 2 to allow it)"
    ]
    (tmp_path / "lead.yaml").write_text(
        spec("lead", "agents:\n  b: {spec: b.yaml}\nmax_depth: 2\n")
    )
    assert problems(tmp_path / "lead.yaml") == []


def test_claude_code_tool_names(tmp_path: Path) -> None:
    folder = tmp_path / ".claude" / "agents"
    folder.mkdir(parents=True)
    (folder / "code-explorer.md").write_text(
        EXPLORER_MD.replace("WebSearch", "WebSearch, Frobnicate")
    )
    lead = tmp_path / "lead.yaml"
    lead.write_text(
        spec("lead", "tools: [read, grep, ls, find]\nagents:\n  from: .claude/agents\n")
    )
    found = [line.replace(str(tmp_path) + "/", "") for line in problems(lead)]
    assert any(
        "code-explorer.md:4:8: error: tool 'Frobnicate' is neither Claude Code's nor harnessc's"
        in line
        for line in found
    ), found
    assert any("warning: Claude Code's WebFetch has no harnessc tool: left out" in f for f in found)
    assert any("warning: Claude Code's NotebookRead has no harnessc tool" in f for f in found)
    # the parent has no todo tool: TodoWrite is left out with a warning
    assert any("the parent agent has no todo tool: left out" in f for f in found)


def test_the_compiled_lead_names_its_sub_agents(tmp_path: Path) -> None:
    folder = tmp_path / ".claude" / "agents"
    folder.mkdir(parents=True)
    (folder / "code-explorer.md").write_text(EXPLORER_MD)
    (tmp_path / "reviewer.yaml").write_text(spec("reviewer"))
    lead = tmp_path / "lead.yaml"
    lead.write_text(
        spec(
            "lead",
            "tools: [read, grep, ls, find]\nagents:\n  reviewer: {spec: reviewer.yaml}\n"
            "  from: .claude/agents\nmax_depth: 1\n",
        )
    )
    loaded = load_spec(lead)
    assert loaded.ok, loaded.diagnostics
    out = compile_specs([loaded], tmp_path / "generated")
    assert sorted(out) == ["lead.py", "reviewer.py"]
    text = out["lead.py"]
    assert 'module=Path(__file__).resolve().parent / "reviewer.py"' in text
    assert 'name="code-explorer"' in text
    assert 'tools=("find", "grep", "ls", "read")' in text
    compile(text, "lead.py", "exec")


def test_sub_agents_in_a_durable_run_are_accepted(tmp_path: Path) -> None:
    (tmp_path / "b.yaml").write_text(spec("b"))
    lead = tmp_path / "lead.yaml"
    lead.write_text(
        spec(
            "lead",
            "agents:\n  b: {spec: b.yaml}\n"
            "durable: {engine: dbos, database_url: 'postgresql://x@127.0.0.1/x'}\n",
        )
    )
    assert problems(lead) == []


def test_a_sub_agents_budget_names_its_limits_and_not_a_remote_agents(tmp_path: Path) -> None:
    lead = tmp_path / "lead.yaml"
    lead.write_text(
        spec("lead", "agents:\n  judge:\n    a2a: http://127.0.0.1:1/\n    budget: {turns: 2}\n")
    )
    [problem] = problems(lead)
    assert "budget is for spec and from sub-agents" in problem and problem.startswith("lead.yaml:")
    lead.write_text(spec("lead", "agents:\n  reviewer:\n    from: r.md\n    budget: {turn: 2}\n"))
    found = problems(lead)
    assert any("lead.yaml:13:" in p and "turns" in p for p in found), found
