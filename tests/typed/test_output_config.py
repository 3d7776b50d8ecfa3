"""OutputConfig: wrapping, parsing replies, strict mode, validation messages."""

from __future__ import annotations

import pytest

from harnessc.runtime.agent.typed_result import strict_allowed
from harnessc.runtime.options.typed_output import OutputConfig, extract_json


def test_a_schema_that_is_not_an_object_travels_wrapped() -> None:
    config = OutputConfig(schema={"type": "array", "items": {"type": "integer"}})
    assert config.wrapped
    assert config.object_schema()["required"] == ["result"]
    assert config.validate({"result": [1, 2]}) == ([1, 2], [])
    assert config.parse_text("[3, 4]") == ([3, 4], [])
    value, errors = config.parse_text('["x"]')
    assert errors and "result" in errors[0]


@pytest.mark.parametrize(
    "text",
    ['{"a": 1}', 'Sure:\n```json\n{"a": 1}\n```', 'The answer is {"a": 1}. Done.'],
)
def test_replies_are_parsed_from_text_fences_or_braces(text: str) -> None:
    assert extract_json(text) == {"a": 1}


def test_a_reply_without_json_is_an_error_not_an_exception() -> None:
    config = OutputConfig(schema={"type": "object", "properties": {}})
    value, errors = config.parse_text("I approve.")
    assert value is None and errors[0].startswith("the reply is not JSON")


def test_strict_mode_only_for_closed_objects_requiring_every_property() -> None:
    closed = {
        "type": "object",
        "properties": {"a": {"type": "string"}},
        "required": ["a"],
        "additionalProperties": False,
    }
    assert strict_allowed(closed)
    assert not strict_allowed({**closed, "required": []})
    assert not strict_allowed({k: v for k, v in closed.items() if k != "additionalProperties"})
    nested = {**closed, "properties": {"a": {"type": "object", "properties": {}}}}
    assert not strict_allowed(nested)


def test_an_output_needs_exactly_one_of_schema_and_type() -> None:
    with pytest.raises(ValueError):
        OutputConfig()
    with pytest.raises(ValueError):
        OutputConfig(schema={"type": "object"}, mode="json")  # type: ignore[arg-type]
