"""Real skills and prompt templates of the ecosystem (``shared/interop/``), loaded and
expanded as pi and the Agent Skills reference do.

``shared/`` sits beside the repository (CI clones it there, as ``/work/main`` beside
``/work/shared``); a worktree one level deeper finds it one level up.
"""

from __future__ import annotations

import json
import lzma
import os
from pathlib import Path
from typing import Any

import pytest

from harnessc.runtime.resources import (
    expand_prompt_template,
    expand_skill_command,
    load_prompt_templates,
    load_skills,
    parse_command_args,
    skills_prompt_block,
    substitute_args,
)

REPO = Path(__file__).resolve().parents[2]
_CANDIDATES = [REPO / ".." / "shared", REPO / ".." / ".." / "shared"]
SHARED = next((p.resolve() for p in _CANDIDATES if (p / "interop").is_dir()), None)
pytestmark = pytest.mark.skipif(
    SHARED is None,
    reason="shared/interop/ (pi's and the Agent Skills' fixtures) is not beside the repository",
)
INTEROP = (SHARED or Path("/nonexistent")) / "interop"


def _vectors() -> dict[str, Any]:
    return json.loads((INTEROP / "templates" / "template-vectors.json").read_text())


def test_template_functions_match_pis_results() -> None:
    vectors = _vectors()
    assert vectors["failed"] == 0
    for call in vectors["calls"]:
        if call["fn"] == "parseCommandArgs":
            assert parse_command_args(*call["args"]) == call["pi"], call
        else:
            assert call["fn"] == "substituteArgs"
            assert substitute_args(*call["args"]) == call["pi"], call


def test_pi_prompt_templates_expand_as_pi_expands_them() -> None:
    templates, diagnostics = load_prompt_templates([str(INTEROP / "templates" / "pi-prompts")])
    assert [d for d in diagnostics if d.severity == "error"] == []
    assert sorted(t.name for t in templates) == [
        "cl",
        "implement",
        "implement-and-review",
        "is",
        "pr",
        "scout-and-plan",
    ]
    expansions = _vectors()["expansions"]
    assert len(expansions) == 18
    for case in expansions:
        assert expand_prompt_template(case["text"], templates) == case["pi"], case["text"]


def test_pi_skill_fixtures() -> None:
    root = INTEROP / "skills" / "pi" / "skills"
    skills, diagnostics = load_skills([str(root)])
    by_name = {s.name: s for s in skills}
    assert set(by_name) == {
        "bad--name",
        "child-skill",
        "different-name",
        "disable-model-invocation",
        "Invalid_Name",
        "multiline-description",
        "root-skill-preferred",
        "this-is-a-very-long-skill-name-that-exceeds-the-sixty-four-character-limit-set-by-the-standard",
        "unknown-field",
        "valid-skill",
    }
    assert by_name["disable-model-invocation"].disable_model_invocation
    assert "It spans multiple lines." in by_name["multiline-description"].description
    assert by_name["root-skill-preferred"].file_path.endswith("root-skill-preferred/SKILL.md")

    def said(folder: str) -> list[tuple[str, str]]:
        return [
            (d.severity, d.message)
            for d in diagnostics
            if Path(d.path).parent.name == folder or folder in Path(d.path).parts[-2:]
        ]

    assert said("valid-skill") == []
    assert any(s == "error" and "a [ list is not closed" in m for s, m in said("invalid-yaml"))
    assert any(s == "error" and "description is missing" in m for s, m in said("no-frontmatter"))
    assert any("does not match its folder" in m for _, m in said("name-mismatch"))
    assert any("longer than 64" in m for _, m in said("long-name"))
    assert said("unknown-field") == []  # pi's skills.test.ts: unknown fields are ignored
    assert said("disable-model-invocation") == []
    collision, notes = load_skills([str(INTEROP / "skills" / "pi" / "skills-collision")])
    [calendar] = collision
    assert "/first/" in calendar.file_path
    assert any("already used" in d.message for d in notes)


def test_agent_skills_reference_cases(tmp_path: Path) -> None:
    """The reference validator's cases: a spec-valid skill loads without a word; an
    invalid one still loads (lenient, as the client guidance asks) with a warning, except
    for fields the spec does not name, which are ignored without one, as pi does."""
    cases = json.loads((INTEROP / "skills" / "agentskills-ref-cases.json").read_text())
    for index, case in enumerate(cases):
        root = tmp_path / str(index)
        (root / case["dir"]).mkdir(parents=True)
        (root / case["dir"] / "SKILL.md").write_text(case["skill_md"], encoding="utf-8")
        skills, diagnostics = load_skills([str(root)])
        assert len(skills) == 1, case["test"]
        if case["spec_valid"] or case["test"] == "test_unexpected_fields":
            assert diagnostics == [], (case["test"], diagnostics)
        else:
            assert [d.severity for d in diagnostics] and all(
                d.severity == "warning" for d in diagnostics
            ), (case["test"], diagnostics)


def test_anthropics_skills(tmp_path: Path) -> None:
    root = INTEROP / "skills" / "anthropics"
    skills, diagnostics = load_skills([str(root)])
    assert sorted(s.name for s in skills) == [
        "brand-guidelines",
        "internal-comms",
        "template-skill",
    ]
    assert [d.message for d in diagnostics] == [
        "name 'template-skill' does not match its folder 'template'"
    ]
    # claude-api: a |- block description of 1068 characters, over the spec's 1024
    (tmp_path / "claude-api").mkdir()
    text = lzma.decompress((root / "claude-api" / "SKILL.md.xz").read_bytes())
    (tmp_path / "claude-api" / "SKILL.md").write_bytes(text)
    [api], notes = load_skills([str(tmp_path)])
    assert api.name == "claude-api" and len(api.description) == 1068
    assert [d.message for d in notes] == ["description is 1068 characters, over the 1024 limit"]
    # /skill: expansion carries pi's line about relative references
    expanded = expand_skill_command("/skill:claude-api use streaming", [api])
    assert expanded is not None
    first, second = expanded.split("\n")[:2]
    assert first == f'<skill name="claude-api" location="{tmp_path / "claude-api" / "SKILL.md"}">'
    assert second == f"References are relative to {tmp_path / 'claude-api'}."
    assert expanded.endswith("</skill>\n\nuse streaming")


def test_skills_block_only_with_the_read_tool() -> None:
    skills, _ = load_skills([str(INTEROP / "skills" / "anthropics")])
    block = skills_prompt_block(skills, ["bash", "read"])
    assert "<available_skills>" in block and "brand-guidelines" in block
    assert skills_prompt_block(skills, ["bash", "write"]) == ""
    assert os.path.sep in block  # locations are paths the read tool can open
