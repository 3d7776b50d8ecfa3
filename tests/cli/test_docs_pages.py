"""What a newcomer reads first: the README is a front page (what harnessc is, a spec, the
demo, the two set-up commands, links), each term is defined where it first appears,
every docs/ page opens with a short working example, the index lists each page once."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from harnessc.cli import cli

REPO = Path(__file__).resolve().parents[2]
README = (REPO / "README.md").read_text(encoding="utf-8")
DOCS = REPO / "docs"
# generated, or a list of pages: no example to open with
NOT_GUIDES = {"README.md", "spec-reference.md"}


def _sentence_of_first(text: str, term: str) -> str:
    """The sentence (or list item) holding the first mention of ``term``."""
    found = re.search(rf"(?<![\w/.-]){re.escape(term)}(?![\w-])", text)
    assert found, f"{term!r} is not mentioned"
    start = max(text.rfind(". ", 0, found.start()), text.rfind("\n- ", 0, found.start()))
    end = text.find(". ", found.end())
    return " ".join(text[start + 1 : end if end >= 0 else len(text)].split())


@pytest.mark.parametrize(
    ("term", "definition"),
    [
        ("pi", "coding agent"),
        ("pull point", "waits for its caller"),
        ("DBOS", "workflows"),
        ("A2A", "Agent2Agent protocol"),
        ("AG-UI", "Agent-User Interaction protocol"),
        ("MCP", "Model Context Protocol"),
    ],
)
def test_each_term_is_defined_where_the_readme_first_uses_it(term: str, definition: str) -> None:
    assert definition in _sentence_of_first(README, term), _sentence_of_first(README, term)


def test_the_readme_is_a_front_page() -> None:
    words = len(README.split())
    assert words < 1300, f"README has {words} words: details belong in docs/"
    assert not re.search(r"\d\s?(MiB|KiB|ms of CPU)\b", README), "figures belong in docs/"
    quick = README[README.index("## Quick start") : README.index("### Try it")]
    assert "PostgreSQL" in quick and "docs/development.md" in quick  # a link, no details
    assert "HARNESSC_TEST_PG_DSN" not in README and "pg-test-up" not in README
    spec = re.search(r"```yaml\n(.*?)```", README, re.S)
    assert spec is not None and len(spec.group(1).splitlines()) <= 6
    assert "python3 -m pip install -e '.[dev]' && harnessc build" in README
    assert "harnessc build --check && python3 -m pytest" in README
    assert "docs/your-own-project.md" in README


def test_the_figures_and_the_test_notes_have_their_pages() -> None:
    development = (DOCS / "development.md").read_text(encoding="utf-8")
    assert "HARNESSC_TEST_PG_DSN" in development and "scripts/pg-test-up" in development
    performance = (DOCS / "performance.md").read_text(encoding="utf-8")
    assert "per session" in performance


def test_the_index_lists_every_page_once() -> None:
    index = (DOCS / "README.md").read_text(encoding="utf-8")
    links = re.findall(r"\]\(([\w.-]+\.md)\)", index)
    doubled = sorted({link for link in links if links.count(link) > 1})
    assert not doubled, f"listed twice: {doubled}"
    pages = sorted(p.name for p in DOCS.glob("*.md") if p.name != "README.md")
    assert sorted(set(links)) == pages


@pytest.mark.parametrize(
    "page", sorted(p.name for p in DOCS.glob("*.md") if p.name not in NOT_GUIDES)
)
def test_every_page_opens_with_a_short_example(page: str) -> None:
    """The first thing after the title and a short introduction is a code block,
    before any section heading: the rules come after it."""
    text = (DOCS / page).read_text(encoding="utf-8")
    body = text.split("\n", 1)[1]
    fence = body.find("```")
    heading = body.find("\n## ")
    assert fence >= 0, f"{page} has no example"
    assert heading < 0 or fence < heading, f"{page}: a section comes before the first example"
    intro = body[:fence]
    assert len(intro.split()) <= 120, f"{page}: {len(intro.split())} words before the example"


def test_run_help_says_where_the_agents_own_flags_are() -> None:
    for command, hint in [
        ("run", "harnessc run NAME --help"),
        ("dev", "harnessc dev NAME --help"),
        ("serve", "harnessc serve NAME -- --help"),
    ]:
        shown = CliRunner().invoke(cli, [command, "--help"]).output
        assert hint in " ".join(shown.split()), shown


def test_writing_a_spec_lists_every_command() -> None:
    page = (DOCS / "writing-a-spec.md").read_text(encoding="utf-8")
    listed = set(re.findall(r"^harnessc ([a-z-]+)", page, re.M))
    commands = set(cli.commands)  # type: ignore[attr-defined]
    assert commands <= listed, f"missing from writing-a-spec.md: {sorted(commands - listed)}"


@pytest.mark.parametrize(
    "page", ["extensions.md", "hooks.md", "tools.md", "skills-and-templates.md"]
)
def test_the_opening_spec_example_of_a_page_validates(page: str) -> None:
    """As a part of a spec beside the examples (its paths resolve against agents/)."""
    from harnessc.spec import format_diagnostics, parse_spec

    block = re.search(r"```yaml\n(.*?)```", (DOCS / page).read_text(encoding="utf-8"), re.S)
    assert block is not None
    head = "version: 1\nname: example\nmodels:\n  main: {provider: openai, id: m}\n"
    if "\ntools:" not in "\n" + block.group(1):
        head += "tools: [read, write, edit, bash]\n"
    loaded = parse_spec((head + block.group(1)).encode(), REPO / "agents" / "example.yaml")
    errors = [d for d in loaded.diagnostics if d.severity == "error"]
    assert not errors, format_diagnostics(errors)
