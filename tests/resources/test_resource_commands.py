from __future__ import annotations

import pytest

from harnessc.runtime.resources import (
    PromptTemplate,
    Skill,
    expand_prompt_template,
    expand_skill_command,
    format_skills_for_prompt,
    parse_command_args,
    substitute_args,
)

SKILLS = [
    Skill("pdf", "Work with PDFs & <forms>", "Use pdftotext.", "/s/pdf/SKILL.md"),
    Skill(
        "secret",
        "Only by hand",
        "Hidden body.",
        "/s/secret/SKILL.md",
        disable_model_invocation=True,
    ),
    Skill("quote", 'Say "hi"', "Q body", "/s/it's/SKILL.md"),
]


def test_format_skills_for_prompt():
    block = format_skills_for_prompt(SKILLS)
    assert "<available_skills>" in block and block.endswith("</available_skills>")
    assert (
        "    <name>pdf</name>\n    <description>Work with PDFs &amp; &lt;forms&gt;</description>"
        in block
    )
    assert "<location>/s/pdf/SKILL.md</location>" in block
    assert "secret" not in block
    assert "<description>Say &quot;hi&quot;</description>" in block
    assert "<location>/s/it&apos;s/SKILL.md</location>" in block
    assert "read tool" in block
    assert format_skills_for_prompt([SKILLS[1]]) == ""
    assert format_skills_for_prompt([]) == ""


def test_expand_skill_command():
    assert expand_skill_command("/skill:pdf extract page 2", SKILLS) == (
        '<skill name="pdf" location="/s/pdf/SKILL.md">\nReferences are relative to /s/pdf.\n\n'
        "Use pdftotext.\n</skill>\n\nextract page 2"
    )
    assert expand_skill_command("/skill:pdf", SKILLS) == (
        '<skill name="pdf" location="/s/pdf/SKILL.md">\nReferences are relative to /s/pdf.\n\n'
        "Use pdftotext.\n</skill>"
    )
    # user invocation works even when the model may not invoke it
    assert expand_skill_command("/skill:secret  go", SKILLS).endswith("</skill>\n\ngo")
    assert expand_skill_command("/skill:pdf\nmulti\nline", SKILLS).endswith(
        "</skill>\n\nmulti\nline"
    )
    assert expand_skill_command("/skill:nope x", SKILLS) is None
    assert expand_skill_command("/pdf x", SKILLS) is None
    assert expand_skill_command("hello /skill:pdf", SKILLS) is None


ARGS = ["one", "two words", "three"]

SUBSTITUTIONS = [
    ("$1", "one"),
    ("$2|$3", "two words|three"),
    ("$4", ""),
    ("${1}", "one"),
    ("$@", "one two words three"),
    ("$ARGUMENTS", "one two words three"),
    ("${@}", "one two words three"),
    ("${ARGUMENTS}", "one two words three"),
    ("${@:2}", "two words three"),
    ("${@:2:1}", "two words"),
    ("${@:1:2}", "one two words"),
    ("${@:0}", "one two words three"),
    ("${@:9}", ""),
    ("${1:-fallback}", "one"),
    ("${5:-fallback}", "fallback"),
    ("${5:-}", ""),
    ("${5:-use $1}", "use one"),
    ("${@:-none}", "one two words three"),
    ("$1$2", "onetwo words"),
    ("$10", ""),
    ("cost $ 5 and $x", "cost $ 5 and $x"),
    ("$ARGUMENTSX", "one two words threeX"),
]


@pytest.mark.parametrize(("template", "expected"), SUBSTITUTIONS)
def test_substitution_table(template, expected):
    assert substitute_args(template, ARGS) == expected


def test_substitution_does_not_rescan_arguments():
    assert substitute_args("$1 $2", ["$2", "x"]) == "$2 x"
    assert substitute_args("${1:-d}", [""]) == "d"
    assert substitute_args("$@|${@:-none}", []) == "|none"


ARG_CASES = [
    ("a b  c", ["a", "b", "c"]),
    ('"two words" x', ["two words", "x"]),
    ("'single quoted' \"double\"", ["single quoted", "double"]),
    ('say "it\'s"', ["say", "it's"]),
    # pi's rules, not shell rules (issue 14): a backslash is a character
    ("esc\\ aped", ["esc\\", "aped"]),
    ("C:\\src\\file.ts fix", ["C:\\src\\file.ts", "fix"]),
    ('x "" y', ["x", "y"]),
    ('"quoted \\"text\\""', ["quoted \\text\\"]),
    ('"unclosed quote here', ["unclosed quote here"]),
    ("", []),
]


@pytest.mark.parametrize(("text", "expected"), ARG_CASES)
def test_parse_command_args(text, expected):
    assert parse_command_args(text) == expected


TEMPLATES = [
    PromptTemplate("review", "Review", "Review $1 focusing on ${2:-correctness}.\nAll: $@"),
    PromptTemplate("commit", None, "Commit message for: $ARGUMENTS"),
]


def test_expand_prompt_template():
    assert expand_prompt_template('/review "src/a b.py" speed', TEMPLATES) == (
        "Review src/a b.py focusing on speed.\nAll: src/a b.py speed"
    )
    assert expand_prompt_template("/review x.py", TEMPLATES) == (
        "Review x.py focusing on correctness.\nAll: x.py"
    )
    assert expand_prompt_template("/commit", TEMPLATES) == "Commit message for: "
    assert expand_prompt_template("/unknown x", TEMPLATES) is None
    assert expand_prompt_template("review x", TEMPLATES) is None
    assert expand_prompt_template("/skill:review x", TEMPLATES) is None
