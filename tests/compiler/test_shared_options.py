"""The harnesses of one generated module share what is the same for all of them (models,
python and external tools, loaded resources), and one harness's changes stay its own."""

from __future__ import annotations

import asyncio
import importlib.util
import shutil
import types
from pathlib import Path

import pytest

from harnessc.runtime.agent import AgentHarness
from harnessc.runtime.resources import AgentHarnessResources, ContextFileSettings, load_resources
from harnessc.runtime.session import Session
from harnessc.runtime.tools import ExternalTool

REPO = Path(__file__).resolve().parents[2]


def load_module(name: str, tag: str) -> types.ModuleType:
    spec = importlib.util.spec_from_file_location(
        f"shared_{name}_{tag}", REPO / "generated" / f"{name}.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def coder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))  # no user-level context file
    for var in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        monkeypatch.setenv(var, "test-key")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    return load_module("coder", tmp_path.name)


def test_two_harnesses_of_one_module_share_models_tools_and_resources(
    coder: types.ModuleType, tmp_path: Path
) -> None:
    first = coder.build_options(session=Session(), cwd=str(tmp_path))
    second = coder.build_options(session=Session(), cwd=str(tmp_path))
    assert first.models is second.models
    assert first.resources is second.resources
    by_name = [{t.name: t for t in options.tools} for options in (first, second)]
    # the python and external tools are shared, the built-in ones made for each harness
    assert by_name[0]["count_lines"] is by_name[1]["count_lines"]
    assert by_name[0]["ask_user"] is by_name[1]["ask_user"]
    assert by_name[0]["bash"] is not by_name[1]["bash"]
    assert [t.name for t in first.tools] == [t.name for t in second.tools]  # spec order
    one, two = AgentHarness(first), AgentHarness(second)
    assert one.models == two.models and one.model is two.model


def test_one_harness_changes_stay_its_own(coder: types.ModuleType, tmp_path: Path) -> None:
    one = AgentHarness(coder.build_options(session=Session(), cwd=str(tmp_path)))
    two = AgentHarness(coder.build_options(session=Session(), cwd=str(tmp_path)))
    active = two.active_tool_names

    async def change() -> None:
        await one.set_model("careful")
        await one.set_active_tools(["read"])

    asyncio.run(change())
    one.add_tools([ExternalTool(name="extra", description="x", parameters={"type": "object"})])
    one.models["main"] = one.models["careful"]  # a copy: the shared map is not changed
    assert one.model.id == "claude-sonnet-4-5" and two.model.id == "gpt-4.1-mini"
    assert one.active_tool_names == ["read", "extra"]
    assert two.active_tool_names == active and "extra" not in two.tools
    assert two.models["main"].id == "gpt-4.1-mini"
    assert [t.name for t in two.tool_specs()] == active
    three = AgentHarness(coder.build_options(session=Session(), cwd=str(tmp_path)))
    assert three.active_tool_names == active and "extra" not in three.tools


def test_a_harness_of_shared_tools_adds_and_removes_its_own(tmp_path: Path) -> None:
    module = load_module("hello", tmp_path.name)
    tools = (ExternalTool(name="a", description="a", parameters={"type": "object"}),)
    first = module.build_options(session=Session())
    first.tools = tools
    second = module.build_options(session=Session())
    second.tools = tools
    one, two, three = AgentHarness(first), AgentHarness(second), AgentHarness(second)
    assert one.remove_tools(["a"]) == ["a"]
    assert one.tools == {} and one.active_tool_names == []
    three.add_tools([ExternalTool(name="b", description="b", parameters={"type": "object"})])
    assert list(three.tools) == ["a", "b"] and three.active_tool_names == ["a", "b"]
    assert list(two.tools) == ["a"] and two.active_tool_names == ["a"]
    assert [t.name for t in two.tool_specs()] == ["a"]
    assert [t.name for t in three.tool_specs()] == ["a", "b"]


def test_models_follow_the_variables_they_read(
    coder: types.ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = coder.build_options(session=Session()).models
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    after = coder.build_options(session=Session()).models
    assert before["main"].base_url == "https://api.openai.com/v1"
    assert after["main"].base_url == "http://127.0.0.1:9/v1"
    assert coder.build_options(session=Session()).models is after


def test_loaded_resources_are_read_again_when_a_file_changes(tmp_path: Path) -> None:
    skills = tmp_path / "skills"
    shutil.copytree(REPO / "agents" / "skills", skills)
    templates = tmp_path / "templates"
    templates.mkdir()
    (templates / "fix.md").write_text("Fix the test $1\n")
    project = tmp_path / "project"
    project.mkdir()
    settings = ContextFileSettings(user=None)

    def load() -> AgentHarnessResources:
        return load_resources([skills], [templates], context_files=settings, cwd=project)

    first = load()
    assert load() is first
    (project / "AGENTS.md").write_text("Use tabs.\n")  # a context file appears
    second = load()
    assert second is not first and [f.content for f in second.context_files] == ["Use tabs.\n"]
    assert load() is second
    skill = skills / "git-commit" / "SKILL.md"
    skill.write_text(skill.read_text().replace("description:", "description: Edited."))
    third = load()
    assert third is not second
    assert any(s.description.startswith("Edited.") for s in third.skills)
    (skills / "new-skill").mkdir()  # a skill added below a skills folder
    (skills / "new-skill" / "SKILL.md").write_text(
        "---\nname: new-skill\ndescription: New.\n---\nBody\n"
    )
    fourth = load()
    assert "new-skill" in [s.name for s in fourth.skills]
    (templates / "review.md").write_text("Review $1\n")
    fifth = load()
    assert sorted(t.name for t in fifth.prompt_templates) == ["fix", "review"]
    other = tmp_path / "other"
    other.mkdir()  # another working directory: its own context files
    assert load_resources([skills], [templates], context_files=settings, cwd=other) is not fifth
