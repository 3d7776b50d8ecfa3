"""MCP tool results and tool listings as harnessc tool results and tool specs.

Works on the SDK's objects by their attributes, so this module imports no SDK code.
Text is capped like every tool output (``cap_text``); images are checked
(``images.py``) and pass as image content, or become a note; structured content becomes the result's details (and its JSON is the text
when a server sends nothing else); audio and binary resources are described, not sent.
The OAuth tokens of the agent's MCP servers (registered secret values) are redacted
from the text and the structured content, so a server that echoes one back does not
put it in the session.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import unquote

from harnessc.runtime.core.messages import ImageContent, TextContent
from harnessc.runtime.mcp.images import check_image
from harnessc.runtime.support.secrets import registered_secret_values
from harnessc.runtime.tools.base import ToolResult
from harnessc.runtime.tools.truncate import MAX_BYTES, cap_text

__all__ = ["redact_secrets", "schema_problem", "to_tool_result"]


def redact_secrets(value: Any) -> Any:
    """``value`` (a text, or JSON data) with every registered secret value redacted."""
    secrets = registered_secret_values()
    if not secrets:
        return value
    return _redact(value, secrets, 0)


def _redact(value: Any, secrets: frozenset[str], depth: int) -> Any:
    if isinstance(value, str):
        for secret in sorted(secrets, key=len, reverse=True):
            if secret in value:
                value = value.replace(secret, "[redacted]")
        return value
    if depth > 64:
        return value
    if isinstance(value, dict):
        return {k: _redact(v, secrets, depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        return [_redact(v, secrets, depth + 1) for v in value]
    return value


def to_tool_result(result: Any, *, server: str, tool: str) -> ToolResult:
    texts: list[str] = []
    images: list[ImageContent] = []
    for block in getattr(result, "content", None) or ():
        kind = getattr(block, "type", None)
        if kind == "text":
            texts.append(str(block.text))
        elif kind == "image":
            image = check_image(getattr(block, "data", None), getattr(block, "mime_type", None))
            if image.problem is not None:
                texts.append(f"[an image of the result is not shown: {image.problem}]")
            else:
                images.append(ImageContent(data=image.data, mime_type=image.mime_type))
        elif kind == "audio":
            texts.append(f"[audio result ({block.mime_type}) not shown]")
        elif kind == "resource":
            resource = block.resource
            text = getattr(resource, "text", None)
            if isinstance(text, str):
                texts.append(text)
            else:
                mime = getattr(resource, "mime_type", None) or "binary"
                texts.append(f"[resource {resource.uri} ({mime}) not shown]")
        elif kind == "resource_link":
            texts.append(f"[resource link: {block.uri}]")
    structured = redact_secrets(getattr(result, "structured_content", None))
    texts = [redact_secrets(text) for text in texts]
    if not texts and not images and structured is not None:
        texts.append(json.dumps(structured, ensure_ascii=False, sort_keys=True))
    is_error = bool(getattr(result, "is_error", False))
    if not texts and not images:
        texts.append(f"{tool} returned an error with no message" if is_error else "(no output)")
    content: list[Any] = [TextContent(cap_text("\n".join(texts)))] if texts else []
    content.extend(images)
    details: dict[str, Any] = {"server": server, "tool": tool}
    if structured is not None and len(json.dumps(structured, default=str)) <= MAX_BYTES:
        details["structured_content"] = structured  # a large one is in the (capped) text
    return ToolResult(content=content, details=details, is_error=is_error)


_TYPES = frozenset({"object", "array", "string", "number", "integer", "boolean", "null"})
_SUBSCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions")
_SUBSCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_SUBSCHEMAS = ("items", "additionalProperties", "not", "if", "then", "else", "contains")


def schema_problem(schema: Any) -> str | None:
    """Why a listed input schema cannot be a tool's parameters, or None when it can."""
    if not isinstance(schema, dict):
        return "its input schema is not an object"
    if schema.get("type") != "object":
        return f"its input schema has type {schema.get('type')!r}, not 'object'"
    try:
        json.dumps(schema)
    except (TypeError, ValueError, RecursionError):
        return "its input schema is not JSON"
    problem = _walk(schema, "inputSchema", 0)
    if problem is None:
        problem = _refs(schema, schema, "inputSchema", 0)
    return problem if problem is not None else _metaschema(schema)


def _metaschema(schema: dict[str, Any]) -> str | None:
    """The schema checked against its JSON Schema metaschema (regex patterns compile,
    ``minLength`` is a count, ...), with the ``jsonschema`` library the MCP SDK uses."""
    from jsonschema import Draft202012Validator, SchemaError
    from jsonschema.validators import validator_for

    try:
        validator_for(schema, default=Draft202012Validator).check_schema(schema)
    except SchemaError as exc:
        where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in exc.absolute_path)
        return f"inputSchema{where}: {exc.message}"
    except (RecursionError, ValueError, TypeError) as exc:
        return f"its input schema cannot be checked: {type(exc).__name__}"
    return None


def _refs(node: Any, root: dict[str, Any], where: str, depth: int) -> str | None:
    """Every ``$ref`` is a local JSON pointer (``#/...``) that resolves in the schema;
    a model API fetches nothing, so any other reference cannot be used."""
    if depth > 64:
        return f"{where} is nested too deeply"
    if isinstance(node, list):
        for i, item in enumerate(node):
            problem = _refs(item, root, f"{where}[{i}]", depth + 1)
            if problem:
                return problem
        return None
    if not isinstance(node, dict):
        return None
    ref = node.get("$ref")
    if isinstance(ref, str) and not _resolves(ref, root):
        return f"{where}.$ref {ref!r} does not resolve in the schema"
    for key, value in node.items():
        if key in ("enum", "const", "default", "examples"):
            continue  # values, not schemas
        problem = _refs(value, root, f"{where}.{key}", depth + 1)
        if problem:
            return problem
    return None


def _resolves(ref: str, root: dict[str, Any]) -> bool:
    if ref == "#":
        return True
    if not ref.startswith("#/"):
        return False
    node: Any = root
    for raw in ref[2:].split("/"):
        part = unquote(raw).replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return False
    return isinstance(node, dict | bool)


def _walk(node: Any, where: str, depth: int) -> str | None:
    """The structural rules of JSON Schema that a model API relies on."""
    if isinstance(node, bool):
        return None
    if not isinstance(node, dict):
        return f"{where} is not a schema"
    if depth > 32:
        return f"{where} is nested too deeply"
    kind = node.get("type")
    kinds = kind if isinstance(kind, list) else [kind] if kind is not None else []
    for item in kinds:
        if item not in _TYPES:
            return f"{where}.type {item!r} is not a JSON Schema type"
    required = node.get("required")
    if required is not None and (
        not isinstance(required, list) or not all(isinstance(r, str) for r in required)
    ):
        return f"{where}.required is not a list of names"
    for key in _SUBSCHEMA_MAPS:
        value = node.get(key)
        if value is None:
            continue
        if not isinstance(value, dict):
            return f"{where}.{key} is not a mapping of schemas"
        for name, sub in value.items():
            problem = _walk(sub, f"{where}.{key}.{name}", depth + 1)
            if problem:
                return problem
    for key in _SUBSCHEMA_LISTS:
        value = node.get(key)
        if value is None:
            continue
        if not isinstance(value, list):
            return f"{where}.{key} is not a list of schemas"
        for i, sub in enumerate(value):
            problem = _walk(sub, f"{where}.{key}[{i}]", depth + 1)
            if problem:
                return problem
    for key in _SUBSCHEMAS:
        if key in node:
            problem = _walk(node[key], f"{where}.{key}", depth + 1)
            if problem:
                return problem
    return None
