"""Frontmatter of skill and template files.

Two forms are accepted: a JSON object closed by a ``---`` line and YAML
between ``---`` lines, read by PyYAML's safe loader with the YAML 1.2 core schema
(``harnessc.runtime.support.yamlsafe``; imported only when a file has YAML frontmatter): nested
maps and lists, block scalars, anchors and flow collections load as pi's ``yaml``
package loads them. Duplicate keys and YAML errors are reported with their line.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Frontmatter", "FrontmatterError", "parse_yaml_frontmatter", "parse_frontmatter"]


class FrontmatterError(ValueError):
    """A frontmatter that cannot be read; ``line`` is 1-based in the file."""

    def __init__(self, message: str, line: int | None = None) -> None:
        super().__init__(f"line {line}: {message}" if line else message)
        self.line = line


@dataclass(slots=True)
class Frontmatter:
    data: dict[str, Any] = field(default_factory=dict)
    body: str = ""
    error: str | None = None
    form: str = "none"  # "none" | "yaml" | "json"


_PLAIN_VALUE = re.compile(r"^([A-Za-z0-9_][A-Za-z0-9_.\-]*):[ \t]+(.*)$")


def _lenient(lines: list[str], first_line: int) -> Any:
    """The Agent Skills clients' fallback for frontmatter written for lenient parsers: a
    top-level plain value holding ``": "`` (``description: Use when: ...``) is read as a
    quoted string. None when the text still does not load."""
    from harnessc.runtime.support.yamlsafe import YamlError, safe_load

    fixed = []
    changed = False
    for line in lines:
        match = _PLAIN_VALUE.match(line)
        value = match.group(2).strip() if match else ""
        if match and ": " in value and value[0] not in "\"'[{|>&*!#":
            quoted = value.replace("\\", "\\\\").replace('"', '\\"')
            fixed.append(f'{match.group(1)}: "{quoted}"')
            changed = True
        else:
            fixed.append(line)
    if not changed:
        return None
    try:
        return safe_load("\n".join(fixed) + "\n", first_line=first_line)
    except YamlError:
        return None


def parse_yaml_frontmatter(lines: list[str], first_line: int = 1) -> dict[str, Any]:
    """The mapping between the ``---`` lines; FrontmatterError when it is not one."""
    from harnessc.runtime.support.yamlsafe import YamlError, safe_load

    text = "\n".join(lines) + "\n"
    try:
        data = safe_load(text, first_line=first_line)
    except YamlError as exc:
        data = _lenient(lines, first_line)
        if data is None:
            raise FrontmatterError(exc.message, exc.line) from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        kind = "a list" if isinstance(data, list) else f"a {type(data).__name__}"
        raise FrontmatterError(f"frontmatter is {kind}, not a mapping of 'key: value'")
    return {str(key): value for key, value in data.items()}


def parse_frontmatter(text: str) -> Frontmatter:
    """Split a file into frontmatter data and body; problems go in ``error``."""
    text = text.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    lines = text.split("\n")
    if lines and lines[0].rstrip() == "---":
        for end in range(1, len(lines)):
            if lines[end].rstrip() in ("---", "..."):
                break
        else:
            return Frontmatter(
                body=text,
                error="frontmatter opened with '---' on line 1 is never closed",
                form="yaml",
            )
        body = "\n".join(lines[end + 1 :])
        try:
            data = parse_yaml_frontmatter(lines[1:end], first_line=2)
        except FrontmatterError as exc:
            return Frontmatter(body=body, error=f"frontmatter: {exc}", form="yaml")
        return Frontmatter(data=data, body=body, form="yaml")
    if text.lstrip().startswith("{"):
        close = next((n for n, line in enumerate(lines) if line.rstrip() == "---"), None)
        if close is None:
            return Frontmatter(body=text)
        source = "\n".join(lines[:close])
        body = "\n".join(lines[close + 1 :])
        try:
            data = json.loads(source)
        except json.JSONDecodeError as exc:
            return Frontmatter(
                body=body,
                error=f"JSON frontmatter: {exc.msg} (line {exc.lineno}, column {exc.colno})",
                form="json",
            )
        if not isinstance(data, dict):
            return Frontmatter(body=body, error="JSON frontmatter must be an object", form="json")
        return Frontmatter(data=data, body=body, form="json")
    return Frontmatter(body=text)
