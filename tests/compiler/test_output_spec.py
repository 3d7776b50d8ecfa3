"""``output:`` in the spec: diagnostics with file:line:col, the generated ``Output``."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from harnessc.compiler import render
from harnessc.spec import load_spec, parse_spec

HEAD = """\
version: 1
name: verdicts
models:
  main: {provider: openai, id: gpt-4.1, api_key_env: OPENAI_API_KEY}
  other: {provider: openai, id: gpt-x, api_key_env: OPENAI_API_KEY, structured_output: true}
"""
SCHEMA = """\
output:
  schema:
    type: object
    description: A review verdict.
    properties:
      verdict: {type: string, enum: [approve, reject]}
      score: {type: integer, minimum: 0, maximum: 10}
      notes:
        type: array
        items:
          type: object
          properties: {line: {type: integer}, text: {type: string}}
          required: [line]
      class: {type: [string, "null"]}
    required: [verdict, score]
    additionalProperties: false
  retries: 1
"""


def _messages(text: str, tmp: Path) -> list[str]:
    loaded = parse_spec(text.encode(), tmp / "verdicts.yaml")
    return [d.format() for d in loaded.diagnostics]


def _module(source: str, tmp: Path, name: str) -> ModuleType:
    path = tmp / "out" / f"{name}.py"
    path.parent.mkdir(exist_ok=True)
    path.write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(f"_typed_{name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_a_schema_that_is_not_json_schema_is_an_error_at_its_line(tmp_path: Path) -> None:
    text = HEAD + "output:\n  schema:\n    type: objekt\n    required: 3\n"
    messages = _messages(text, tmp_path)
    assert any(":8:11: error: 'objekt' is not a JSON Schema type" in m for m in messages), messages
    assert any(":9:15: error: not a valid JSON Schema" in m for m in messages), messages


def test_native_mode_needs_a_model_declaring_structured_output(tmp_path: Path) -> None:
    text = HEAD + "output:\n  schema: {type: object}\n  mode: native\n"
    messages = _messages(text, tmp_path)
    errors = [m for m in messages if "needs structured output" in m]
    assert len(errors) == 1 and ":8:9: error:" in errors[0] and "'main'" in errors[0]
    switched = HEAD + "model: other\noutput:\n  schema: {type: object}\n  mode: native\n"
    warnings = [m for m in _messages(switched, tmp_path) if "needs structured output" in m]
    assert len(warnings) == 1 and "warning" in warnings[0] and "'main'" in warnings[0]


def test_schema_and_type_exclude_each_other_and_the_tool_name_is_taken(tmp_path: Path) -> None:
    both = HEAD + "output: {schema: {type: object}, type: 'm:T'}\n"
    assert any("exactly one of schema and type" in m for m in _messages(both, tmp_path))
    clash = (
        HEAD
        + "tools:\n  - external: {name: final_result, description: x}\n"
        + "output: {schema: {type: object}}\n"
    )
    assert any("'final_result'" in m and "error" in m for m in _messages(clash, tmp_path))


def test_a_type_that_cannot_be_imported_is_reported(tmp_path: Path) -> None:
    (tmp_path / "verdicts_types.py").write_text("class Verdict:\n    pass\n")
    text = HEAD + "output: {type: 'verdicts_types:Verdikt'}\n"
    messages = _messages(text, tmp_path)
    assert any(
        ":6:16: warning: module 'verdicts_types' defines no 'Verdikt'" in m for m in messages
    )
    missing = HEAD + "output: {type: 'nowhere_module:Verdict'}\n"
    assert any("cannot find module 'nowhere_module'" in m for m in _messages(missing, tmp_path))


def test_the_module_exports_a_pydantic_model_of_the_schema(tmp_path: Path) -> None:
    (tmp_path / "verdicts.yaml").write_text(HEAD + SCHEMA)
    loaded = load_spec(tmp_path / "verdicts.yaml")
    assert loaded.ok, [d.format() for d in loaded.diagnostics]
    source = render(loaded, tmp_path / "out")
    assert "class Output(BaseModel):" in source and '"""A review verdict."""' in source
    module = _module(source, tmp_path, "verdicts")
    value = module.Output.model_validate({"verdict": "approve", "score": 3, "notes": [{"line": 1}]})
    assert value.notes[0].line == 1 and value.class_ is None
    with pytest.raises(ValueError):
        module.Output.model_validate({"verdict": "maybe", "score": 3})
    options = module.build_options(session=module.Session())
    assert options.output.retries == 1 and options.output.schema["required"] == ["verdict", "score"]


def test_objects_and_lists_in_const_enum_and_default_compile(tmp_path: Path) -> None:
    """Valid JSON Schema that Literal[...] cannot hold becomes Any (the schema still
    validates it); an object or list default is written as a literal."""
    text = HEAD + (
        "output:\n  schema:\n    type: object\n    properties:\n"
        "      shape: {const: {kind: box}}\n"
        "      pick: {enum: [[1, 2], [3]]}\n"
        "      tags: {type: array, default: [a, b]}\n"
        "      meta: {type: object, default: {k: 1}}\n"
    )
    (tmp_path / "verdicts.yaml").write_text(text)
    loaded = load_spec(tmp_path / "verdicts.yaml")
    assert loaded.ok, [d.format() for d in loaded.diagnostics]
    module = _module(render(loaded, tmp_path / "out"), tmp_path, "shapes")
    value = module.Output.model_validate({"shape": {"kind": "box"}, "pick": [3]})
    assert value.tags == ["a", "b"] and value.meta == {"k": 1}


def test_the_module_exports_the_imported_type(tmp_path: Path) -> None:
    (tmp_path / "verdict_types.py").write_text(
        "from pydantic import BaseModel\n\n\nclass Verdict(BaseModel):\n    verdict: str\n"
    )
    (tmp_path / "verdicts.yaml").write_text(
        HEAD + "output: {type: 'verdict_types:Verdict', mode: prompted}\n"
    )
    loaded = load_spec(tmp_path / "verdicts.yaml")
    assert loaded.ok, [d.format() for d in loaded.diagnostics]
    module = _module(render(loaded, tmp_path / "out"), tmp_path, "verdicts_t")
    assert module.Output.__name__ == "Verdict"
    options = module.build_options(session=module.Session())
    assert options.output.type is module.Output and options.output.mode == "prompted"


def _located(text: str, tmp: Path) -> list[tuple[int, int, str, str]]:
    loaded = parse_spec(text.encode(), tmp / "verdicts.yaml")
    return [(d.line, d.col, d.severity, d.message) for d in loaded.diagnostics]


def test_a_mistyped_type_gets_the_type_it_probably_means(tmp_path: Path) -> None:
    text = HEAD + (
        "output:\n  schema:\n    type: object\n    properties:\n"
        "      summary: {type: strng}\n      tags: {type: [arry, 'null']}\n"
    )
    found = _located(text, tmp_path)
    assert (
        10,
        23,
        "error",
        "'strng' is not a JSON Schema type (array, boolean, integer, null, number, object, "
        "string); did you mean 'string'?",
    ) in found, found
    assert any(
        line == 11
        and s == "error"
        and "'arry' is not a JSON Schema type" in m
        and "did you mean 'array'?" in m
        for line, _, s, m in found
    ), found
    assert not any("not valid under any of the given schemas" in m for *_, m in found), found


def test_required_names_a_property_the_schema_does_not_have(tmp_path: Path) -> None:
    text = HEAD + (
        "output:\n  schema:\n    type: object\n    properties:\n"
        "      summary: {type: string}\n    required: [summary, sumary]\n"
    )
    found = _located(text, tmp_path)
    assert (
        11,
        25,
        "error",
        "required names 'sumary', which is not among the properties (summary); "
        "did you mean 'summary'?",
    ) in found, found


def test_a_ref_cycle_with_no_way_out_is_an_error_at_check(tmp_path: Path) -> None:
    """No finite answer matches: every run would fail validation, so check says so."""
    pure = HEAD + (
        "output:\n  schema:\n    $defs:\n"
        "      a: {$ref: '#/$defs/b'}\n      b: {$ref: '#/$defs/a'}\n"
        "    type: object\n    properties:\n      x: {$ref: '#/$defs/a'}\n"
    )
    found = _located(pure, tmp_path)
    cycles = [(line, m) for line, _, s, m in found if s == "error" and "no way out" in m]
    assert cycles and all(line in (9, 10) for line, _ in cycles), found
    required = HEAD + (
        "output:\n  schema:\n    type: object\n    properties:\n"
        "      next: {$ref: '#'}\n    required: [next]\n"
    )
    found = _located(required, tmp_path)
    assert any(line == 10 and s == "error" and "no way out" in m for line, _, s, m in found), found
    missing = (
        HEAD
        + "output:\n  schema:\n    type: object\n    properties:\n"
        + ("      x: {$ref: '#/$defs/nothing'}\n")
    )
    found = _located(missing, tmp_path)
    assert any(
        line == 10 and s == "error" and "'#/$defs/nothing' points at nothing" in m
        for line, _, s, m in found
    ), found


def test_a_recursive_schema_with_a_way_out_and_unknown_keywords_pass(tmp_path: Path) -> None:
    tree = HEAD + (
        "output:\n  schema:\n    type: object\n    title: A tree\n    x-note: mine\n"
        "    properties:\n      name: {type: string}\n"
        "      children: {type: array, items: {$ref: '#'}}\n"
        "    required: [name, children]\n"
    )
    assert _located(tree, tmp_path) == []
    typo = HEAD + "output:\n  schema:\n    type: object\n    propertes: {a: {type: string}}\n"
    found = _located(typo, tmp_path)
    assert (
        9,
        5,
        "warning",
        "unknown JSON Schema keyword 'propertes' (ignored by validation); "
        "did you mean 'properties'?",
    ) in found, found
