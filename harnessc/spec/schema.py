"""The JSON Schema of a spec, for editors (``# yaml-language-server: $schema=...``)."""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import GenerateJsonSchema, NoDefault
from pydantic_core import core_schema

from harnessc.spec.models import AgentSpec

__all__ = ["export_schema", "schema_dict"]


class _SpecJsonSchema(GenerateJsonSchema):
    """Records the defaults that come from a factory too (``[]``, ``{}``, ``["text", "image"]``).

    A nested section whose default is the section with every key at its own default
    (``resources``, ``session``, ``extensions``) is recorded as ``{}``: an empty mapping
    means the same, and its keys' defaults are in its own schema.
    """

    def get_default_value(self, schema: core_schema.WithDefaultSchema) -> Any:
        factory = schema.get("default_factory")
        if factory is None or schema.get("default_factory_takes_data"):
            return super().get_default_value(schema)
        value = factory()  # type: ignore[call-arg]
        if isinstance(value, BaseModel):
            return value.model_dump(mode="json", exclude_unset=True)
        return value if value is not None else NoDefault


def schema_dict() -> dict[str, Any]:
    schema = AgentSpec.model_json_schema(schema_generator=_SpecJsonSchema)
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", **schema}


def export_schema() -> str:
    """Deterministic text: sorted keys, two-space indent, trailing newline."""
    return json.dumps(schema_dict(), indent=2, sort_keys=True, ensure_ascii=False) + "\n"
