from __future__ import annotations

import os

from harnessc.runtime.resources import (
    AgentHarnessResources,
    load_prompt_templates,
    load_resources,
    load_skills,
    validate_skill_name,
)


def _write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _skill(name, description="Does things.", extra="", body="Body."):
    desc = f"description: {description}\n" if description is not None else ""
    return f"---\nname: {name}\n{desc}{extra}---\n{body}\n"


def _messages(diagnostics):
    return [
        (
            d.severity,
            d.message,
            os.path.basename(os.path.dirname(d.path)) + "/" + os.path.basename(d.path),
        )
        for d in diagnostics
    ]


def test_discovery_rules(tmp_path):
    root = tmp_path / "skills"
    _write(root / "alpha" / "SKILL.md", _skill("alpha"))
    _write(root / "group" / "beta" / "SKILL.md", _skill("beta"))
    _write(
        root / "group" / "beta" / "nested" / "SKILL.md", _skill("nested")
    )  # below a skill: ignored
    _write(root / "group" / "notes.md", _skill("notes"))  # .md below the top level: not a skill
    _write(root / "top-level.md", "---\ndescription: A top-level skill file.\n---\nTop body\n")
    _write(root / ".hidden" / "SKILL.md", _skill("hidden"))
    _write(root / "node_modules" / "x" / "SKILL.md", _skill("x"))
    skills, diagnostics = load_skills([root])
    assert [s.name for s in skills] == ["alpha", "beta", "top-level"]
    assert diagnostics == []
    top = skills[2]
    assert top.description == "A top-level skill file." and top.content == "Top body"
    assert top.file_path == str(root / "top-level.md")
    assert skills[0].content == "Body." and not skills[0].disable_model_invocation


def test_a_skill_folder_or_file_can_be_given_directly(tmp_path):
    folder = tmp_path / "one"
    _write(folder / "SKILL.md", _skill("one"))
    single = _write(tmp_path / "single.md", _skill("single"))
    skills, diagnostics = load_skills([folder, single])
    assert [s.name for s in skills] == ["one", "single"] and diagnostics == []
    assert load_skills(str(folder))[0][0].name == "one"


def test_name_defaults_to_folder_and_json_form(tmp_path):
    root = tmp_path / "skills"
    _write(
        root / "file-ops" / "SKILL.md",
        '{\n"description": "Handle file system operations",\n"disable-model-invocation": true\n}\n---\n# File Operations\n',
    )
    skills, diagnostics = load_skills([root])
    assert diagnostics == []
    assert skills[0].name == "file-ops" and skills[0].disable_model_invocation
    assert skills[0].content == "# File Operations"


def test_diagnostics(tmp_path):
    root = tmp_path / "skills"
    _write(root / "no-desc" / "SKILL.md", _skill("no-desc", description=None))
    _write(root / "bad-yaml" / "SKILL.md", "---\nname: bad-yaml\ndescription: 'oops\n---\n")
    _write(root / "bad-json" / "SKILL.md", '{"description": }\n---\n')
    _write(root / "unclosed" / "SKILL.md", "---\ndescription: x\n")
    _write(root / "Bad_Name" / "SKILL.md", _skill("Bad_Name"))
    _write(root / "double--hyphen" / "SKILL.md", _skill("double--hyphen"))
    _write(root / "mismatch" / "SKILL.md", _skill("other-name"))
    _write(root / "long-desc" / "SKILL.md", _skill("long-desc", description="x" * 1100))
    _write(root / "flag" / "SKILL.md", _skill("flag", extra="disable-model-invocation: maybe\n"))
    (root / "not-utf8").mkdir()
    (root / "not-utf8" / "SKILL.md").write_bytes(b"---\ndescription: \xff\xfe\n---\n")
    (root / "dir-skill" / "SKILL.md").mkdir(parents=True)
    (root / "broken-link").mkdir()
    (root / "broken-link" / "SKILL.md").symlink_to(tmp_path / "missing.md")
    skills, diagnostics = load_skills([root, tmp_path / "does-not-exist"])
    names = [s.name for s in skills]
    assert names == ["Bad_Name", "double--hyphen", "flag", "long-desc", "other-name"]
    found = _messages(diagnostics)
    expected_fragments = [
        ("error", "description is missing", "no-desc/SKILL.md"),
        (
            "error",
            "frontmatter: line 3: a quoted string is not closed; skill not loaded",
            "bad-yaml/SKILL.md",
        ),
        ("error", "JSON frontmatter: Expecting value", "bad-json/SKILL.md"),
        ("error", "never closed", "unclosed/SKILL.md"),
        ("warning", "must use lowercase letters", "Bad_Name/SKILL.md"),
        ("warning", "must use lowercase letters", "double--hyphen/SKILL.md"),
        ("warning", "does not match its folder 'mismatch'", "mismatch/SKILL.md"),
        ("warning", "over the 1024 limit", "long-desc/SKILL.md"),
        ("warning", "must be true or false", "flag/SKILL.md"),
        ("error", "not valid UTF-8", "not-utf8/SKILL.md"),
        ("error", "it is a directory", "dir-skill/SKILL.md"),
        ("error", "broken link", "broken-link/SKILL.md"),
        ("warning", "skills path does not exist", f"{tmp_path.name}/does-not-exist"),
    ]
    for severity, fragment, where in expected_fragments:
        assert any(s == severity and fragment in m and w == where for s, m, w in found), (
            fragment,
            found,
        )
    assert len(found) == len(expected_fragments)


def test_duplicates_first_wins(tmp_path):
    a = _write(tmp_path / "a" / "same" / "SKILL.md", _skill("same", "first one"))
    b = _write(tmp_path / "b" / "same" / "SKILL.md", _skill("same", "second one"))
    skills, diagnostics = load_skills([tmp_path / "a", tmp_path / "b"])
    assert [s.description for s in skills] == ["first one"]
    assert len(diagnostics) == 1
    assert str(a) in diagnostics[0].message and str(b) in diagnostics[0].message
    assert diagnostics[0].path == str(b)


def test_name_rules():
    assert validate_skill_name("pdf-tools-2") == []
    assert validate_skill_name("a" * 64) == []
    assert validate_skill_name("a" * 65)
    for bad in ("-lead", "trail-", "dou--ble", "Upper", "under_score", "spa ce", ""):
        assert validate_skill_name(bad), bad


def test_templates(tmp_path):
    root = tmp_path / "templates"
    _write(
        root / "review.md",
        "---\ndescription: Review code\nargument-hint: <file>\n---\nReview $1 carefully.\n",
    )
    _write(
        root / "commit.md",
        '{\n"description": "Generate commit message"\n}\n---\nGenerate a git commit message for:\n$1\n$ARGUMENTS\n',
    )
    _write(
        root / "plain.md",
        "\n\nExplain the following code in plain words for a newcomer to the project please: $@\n",
    )
    _write(root / "short.md", "Say hi\n")
    _write(root / "broken.md", "---\ndescription: [unclosed\n---\nx\n")
    _write(root / "sub" / "ignored.md", "not loaded (templates are not recursive)")
    _write(root / "notes.txt", "not a template")
    templates, diagnostics = load_prompt_templates([root])
    by_name = {t.name: t for t in templates}
    assert sorted(by_name) == ["commit", "plain", "review", "short"]
    assert by_name["review"].description == "Review code"
    assert by_name["review"].argument_hint == "<file>"
    assert by_name["review"].content == "Review $1 carefully."
    assert by_name["commit"].description == "Generate commit message"
    line = "Explain the following code in plain words for a newcomer to the project please: $@"
    assert by_name["plain"].description == line[:60] + "..."
    assert by_name["short"].description == "Say hi"
    assert [(d.severity, os.path.basename(d.path)) for d in diagnostics] == [("error", "broken.md")]
    assert "not closed" in diagnostics[0].message


def test_template_duplicates_and_missing(tmp_path):
    _write(tmp_path / "a" / "t.md", "first")
    _write(tmp_path / "b" / "t.md", "second")
    templates, diagnostics = load_prompt_templates([tmp_path / "a", tmp_path / "b", tmp_path / "c"])
    assert [t.content for t in templates] == ["first"]
    assert [d.message.split(";")[0] for d in diagnostics] == [
        "templates path does not exist",
        f"template name 't' is already used by {tmp_path / 'a' / 't.md'}",
    ]


def test_load_resources_merges(tmp_path):
    _write(tmp_path / "skills" / "s" / "SKILL.md", _skill("s"))
    _write(tmp_path / "skills" / "bad" / "SKILL.md", _skill("bad", description=None))
    _write(tmp_path / "templates" / "t.md", "hello $1")
    resources = load_resources(
        skills=[tmp_path / "skills"], prompt_templates=[tmp_path / "templates", tmp_path / "nope"]
    )
    assert isinstance(resources, AgentHarnessResources)
    assert [s.name for s in resources.skills] == ["s"]
    assert [t.name for t in resources.prompt_templates] == ["t"]
    assert [d.severity for d in resources.diagnostics] == ["error", "warning"]
    assert resources.skill_dirs == [str(tmp_path / "skills")]
    assert load_resources() == AgentHarnessResources()
