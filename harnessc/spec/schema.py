"""The JSON Schema of a spec, for editors (``# yaml-language-server: $schema=...``)."""

from __future__ import annotations

import json
from typing import Any

from harnessc.spec.models import AgentSpec

__all__ = ["export_schema", "schema_dict"]


def schema_dict() -> dict[str, Any]:
    schema = AgentSpec.model_json_schema()
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", **schema}


def export_schema() -> str:
    """Deterministic text: sorted keys, two-space indent, trailing newline."""
    return json.dumps(schema_dict(), indent=2, sort_keys=True, ensure_ascii=False) + "\n"
