"""The spec reference (docs/spec-reference.md) is the fresh rendering of the JSON Schema,
the README and docs/ document every top-level key, every hook name, and a spec that validates;
every link between the pages resolves."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from harnessc.cli import cli
from harnessc.compiler.reference import render_reference
from harnessc.runtime.core.hooks import HOOK_NAMES
from harnessc.spec import format_diagnostics, parse_spec
from harnessc.spec import models as spec_models
from harnessc.spec.models import SpecModel
from harnessc.spec.schema import schema_dict

REPO = Path(__file__).resolve().parents[2]
REFERENCE = REPO / "docs" / "spec-reference.md"
README = REPO / "README.md"
DOCS = REPO / "docs"


def _section(text: str, title: str) -> str:
    """The body of the ``## title`` section of a Markdown text (up to the next ``## ``)."""
    match = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", text, re.M | re.S)
    assert match, f"README has no '## {title}' section"
    return match.group(1)


def test_committed_reference_equals_the_rendering() -> None:
    committed = REFERENCE.read_text(encoding="utf-8")
    assert committed == render_reference(schema_dict()), (
        "run `harnessc schema --markdown -o docs/spec-reference.md`"
    )


def test_schema_markdown_prints_the_reference_and_checks_the_file(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(REPO)
    runner = CliRunner()
    printed = runner.invoke(cli, ["schema", "--markdown"])
    assert printed.exit_code == 0, printed.output
    assert printed.stdout == render_reference(schema_dict())
    checked = runner.invoke(
        cli, ["schema", "--markdown", "-o", "docs/spec-reference.md", "--check"]
    )
    assert checked.exit_code == 0, checked.output


def test_schema_markdown_check_reports_a_stale_file(tmp_path: Path) -> None:
    target = tmp_path / "reference.md"
    target.write_text("# old\n", encoding="utf-8")
    result = CliRunner().invoke(cli, ["schema", "--markdown", "-o", str(target), "--check"])
    assert result.exit_code == 1
    assert "harnessc schema --markdown -o" in result.stdout


def test_every_top_level_key_is_documented() -> None:
    keys = list(schema_dict()["properties"])
    assert keys
    section = _section(README.read_text(encoding="utf-8"), "Spec reference")
    assert "docs/spec-reference.md" in section
    reference = REFERENCE.read_text(encoding="utf-8")
    missing = [k for k in keys if f"`{k}`" not in section and f"| `{k}` |" not in reference]
    assert not missing, f"top-level keys missing from the reference: {missing}"


def test_every_nested_key_has_a_row() -> None:
    reference = REFERENCE.read_text(encoding="utf-8")
    defs = schema_dict()["$defs"]
    for name in ("ModelSpec", "BudgetSpec", "CompactionSpec", "HookHandlerSpec", "StreamSpec"):
        for key in defs[name]["properties"]:
            assert re.search(rf"\| `[^`]*\.{re.escape(key)}` \|", reference), (name, key)


def _spec_models() -> list[type[SpecModel]]:
    found = [getattr(spec_models, name) for name in dir(spec_models)]
    return [m for m in found if isinstance(m, type) and issubclass(m, SpecModel)]


def test_every_field_has_a_description() -> None:
    """Editor hover text and the reference come from these; none may be blank."""
    blank = [
        f"{model.__name__}.{name}"
        for model in _spec_models()
        for name, info in model.model_fields.items()
        if not (info.description or "").strip()
    ]
    assert not blank, f"fields without a description: {blank}"
    for node in schema_dict()["$defs"].values():
        for key, prop in (node.get("properties") or {}).items():
            assert prop.get("description"), key
    for key, prop in schema_dict()["properties"].items():
        assert prop.get("description"), key


def test_every_optional_key_records_its_default() -> None:
    """Defaults from a factory are in the schema too; the reference has no "-" cell."""
    reference = REFERENCE.read_text(encoding="utf-8")
    assert "| - |" not in reference
    props = schema_dict()["properties"]
    assert props["tools"]["default"] == []
    assert props["hooks"]["default"] == {}
    assert props["resources"]["default"] == {}
    assert props["session"]["default"] == {}
    assert props["extensions"]["default"] == {}
    model = schema_dict()["$defs"]["ModelSpec"]["properties"]
    assert model["input"]["default"] == ["text", "image"]
    assert model["headers"]["default"] == {}
    assert "| `models.<key>.input` | list of" in reference
    assert '| `["text", "image"]` |' in reference


def test_every_hook_name_is_in_the_hooks_page() -> None:
    page = (DOCS / "hooks.md").read_text(encoding="utf-8")
    missing = sorted(name for name in HOOK_NAMES if f"`{name}`" not in page)
    assert not missing, f"hook names missing from docs/hooks.md: {missing}"


def test_the_annotated_spec_validates() -> None:
    page = (DOCS / "writing-a-spec.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```yaml\n(.*?)```", page, re.S)
    assert blocks, "no yaml example in docs/writing-a-spec.md"
    # As if it were a file beside the examples: its paths resolve against agents/.
    loaded = parse_spec(blocks[0].encode(), REPO / "agents" / "readme-example.yaml")
    assert loaded.ok and not loaded.diagnostics, format_diagnostics(loaded.diagnostics)


def test_render_reference_types_defaults_and_nesting() -> None:
    schema = {
        "title": "t",
        "type": "object",
        "required": ["name"],
        "properties": {
            "name": {"type": "string", "pattern": "^[a-z]+$", "description": "The <name>."},
            "limit": {
                "anyOf": [{"type": "integer", "exclusiveMinimum": 0}, {"type": "null"}],
                "default": None,
            },
            "mode": {"enum": ["a", "b"], "type": "string", "default": "a"},
            "items": {"type": "array", "items": {"$ref": "#/$defs/Item"}},
        },
        "$defs": {
            "Item": {
                "type": "object",
                "description": "One item.",
                "properties": {"flag": {"type": "boolean", "default": True}},
            }
        },
    }
    text = render_reference(schema)
    assert "| `name` | string | required | The &lt;name&gt;. Pattern: `^[a-z]+$`. |" in text
    assert "| `limit` | integer (> 0) | `null` |  |" in text
    assert '| `mode` | `"a"` \\| `"b"` | `"a"` |  |' in text
    assert "## `items[]`" in text
    assert "| `items[].flag` | boolean | `true` |  |" in text


def test_ci_runs_exactly_the_readme_test_command() -> None:
    quick_start = _section(README.read_text(encoding="utf-8"), "Quick start")
    blocks = re.findall(r"Run the tests:\n\n```bash\n(.*?)\n```", quick_start, re.S)
    assert len(blocks) == 1, "README's Quick start has no 'Run the tests:' command"
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    commands = [line for line in ci.splitlines() if line.strip() and not line.startswith("#")]
    assert commands[-1] == blocks[0].strip()  # the last step is the README's command
    assert any("pip install" in line and "-e '.[dev]'" in line for line in commands)


def test_every_relative_link_of_the_docs_resolves() -> None:
    pages = [README, *sorted(DOCS.glob("*.md")), REPO / "agents" / "README.md"]
    broken = []
    for page in pages:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page.read_text(encoding="utf-8")):
            if "://" in target:
                continue
            if not (page.parent / target).exists():
                broken.append(f"{page.relative_to(REPO)}: {target}")
    assert not broken, broken
