"""Load YAML into plain values while remembering where every key and value came from.

Safe by construction: only the YAML 1.2 core scalar types (str, int, float, bool,
null), no object-constructing tags, duplicate keys reported, a size cap on the file
and a cap on the number of nodes after alias expansion ("billion laughs").
Booleans are only ``true``/``false`` and there are no sexagesimal numbers or
timestamps, so ``on``, ``no`` and ``12:30`` stay strings.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from harnessc.runtime.support.yamlsafe import core_loaders
from harnessc.spec.diagnostics import Diagnostic

__all__ = ["MAX_BYTES", "MAX_DEPTH", "MAX_NODES", "Mark", "KeyPath", "YamlSource", "load_yaml"]

MAX_BYTES = 10 * 1024 * 1024
MAX_NODES = 50_000
MAX_DEPTH = 64
MAX_FLOW_DEPTH = 256  # checked before parsing: PyYAML slows down badly on deep flow nesting

KeyPath = tuple[str | int, ...]

_STR = "tag:yaml.org,2002:str"
_MAP = "tag:yaml.org,2002:map"
_SEQ = "tag:yaml.org,2002:seq"
_MERGE = "tag:yaml.org,2002:merge"
_SCALAR_TAGS = frozenset(
    {
        _STR,
        "tag:yaml.org,2002:int",
        "tag:yaml.org,2002:float",
        "tag:yaml.org,2002:bool",
        "tag:yaml.org,2002:null",
    }
)


# The YAML 1.2 core-schema loaders, shared with the runtime's frontmatter.
_Loader, _FastLoader = core_loaders()


@dataclass(slots=True, frozen=True)
class Mark:
    line: int  # from 1
    col: int  # from 1


@dataclass(slots=True)
class YamlSource:
    """Plain data plus the position of every value and every mapping key, by path."""

    path: str
    data: Any = None
    values: dict[KeyPath, Mark] = field(default_factory=dict)
    keys: dict[KeyPath, Mark] = field(default_factory=dict)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    # Values already reported by the loader (unsupported tags ...): read as null and
    # not reported again by the validation.
    broken: set[KeyPath] = field(default_factory=set)

    def mark(self, path: KeyPath, *, key: bool = False) -> Mark:
        """Where ``path`` is (its key when ``key``), else its closest known ancestor."""
        table = self.keys if key else self.values
        probe = tuple(path)
        while probe:
            if probe in table:
                return table[probe]
            if key and probe in self.values:
                return self.values[probe]
            probe = probe[:-1]
        return self.values.get((), Mark(1, 1))

    def error(self, mark: Mark, message: str) -> None:
        self.diagnostics.append(Diagnostic(self.path, mark.line, mark.col, "error", message))


class _TooLarge(Exception):
    pass


def _mark(node: Node) -> Mark:
    return Mark(node.start_mark.line + 1, node.start_mark.column + 1)


def _line_col(text: str, offset: int) -> Mark:
    before = text[:offset]
    line = before.count("\n") + 1
    return Mark(line, offset - (before.rfind("\n") + 1) + 1)


class _Builder:
    def __init__(self, loader: yaml.SafeLoader, source: YamlSource) -> None:
        self.loader = loader
        self.source = source
        self.nodes = 0
        self.active: set[int] = set()

    def build(self, node: Node, path: KeyPath) -> Any:
        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise _TooLarge
        self.source.values.setdefault(path, _mark(node))
        if len(path) > MAX_DEPTH:
            self.source.error(_mark(node), f"nesting is deeper than {MAX_DEPTH} levels")
            return None
        if id(node) in self.active:
            self.source.error(_mark(node), "recursive alias: a node contains itself")
            return None
        self.active.add(id(node))
        try:
            if isinstance(node, ScalarNode):
                return self._scalar(node, path)
            if node.tag not in (_SEQ, _MAP):
                self._unsupported(node, path)
                return None
            if isinstance(node, SequenceNode):
                return [self.build(item, (*path, i)) for i, item in enumerate(node.value)]
            if isinstance(node, MappingNode):
                return self._mapping(node, path)
            return None  # pragma: no cover - the composer makes only these three
        finally:
            self.active.discard(id(node))

    def _unsupported(self, node: Node, path: KeyPath | None) -> None:
        tag = node.tag.replace("tag:yaml.org,2002:", "!!")
        self.source.error(_mark(node), f"unsupported YAML tag {tag!r}")
        if path is not None:
            self.source.broken.add(path)

    def _scalar(self, node: ScalarNode, path: KeyPath | None) -> Any:
        if node.tag not in _SCALAR_TAGS:
            self._unsupported(node, path)
            return None
        try:
            return self.loader.construct_object(node)
        except (yaml.YAMLError, ValueError) as exc:
            self.source.error(_mark(node), f"invalid {node.tag.rsplit(':', 1)[-1]}: {exc}")
            return None

    def _key(self, node: Node) -> str | None:
        if isinstance(node, ScalarNode):
            value = self._scalar(node, None)
            if isinstance(value, str):
                return value
            if node.tag not in _SCALAR_TAGS:
                return None
            text = node.value
            self.source.error(
                _mark(node), f"mapping keys must be strings; quote {text!r} as '{text}'"
            )
            return None
        self.source.error(_mark(node), "mapping keys must be plain strings")
        return None

    def _mapping(self, node: MappingNode, path: KeyPath) -> dict[str, Any]:
        result: dict[str, Any] = {}
        merged: dict[str, Any] = {}
        seen: dict[str, Mark] = {}
        for key_node, value_node in node.value:
            if key_node.tag == _MERGE:
                self._merge(value_node, path, merged)
                continue
            key = self._key(key_node)
            if key is None:
                continue
            key_mark = _mark(key_node)
            if key in seen:
                first = seen[key]
                self.source.error(
                    key_mark, f"duplicate key {key!r} (first defined at line {first.line})"
                )
                continue
            seen[key] = key_mark
            self.source.keys[(*path, key)] = key_mark
            result[key] = self.build(value_node, (*path, key))
        for key, value in merged.items():
            result.setdefault(key, value)
        return result

    def _merge(self, node: Node, path: KeyPath, into: dict[str, Any]) -> None:
        sources = node.value if isinstance(node, SequenceNode) else [node]
        for source in sources:
            if not isinstance(source, MappingNode):
                self.source.error(_mark(source), "'<<' merges only mappings")
                continue
            for key, value in self._mapping(source, path).items():
                into.setdefault(key, value)


_FLOW_TOKENS = re.compile(r"[\[\]{}'\"#\n\\]")


def _flow_depth_exceeded(text: str) -> int | None:
    """Offset where ``[``/``{`` nesting (outside quotes and comments) passes the cap."""
    depth = 0
    quote = ""
    comment = False
    escaped = False
    for match in _FLOW_TOKENS.finditer(text):
        ch = match.group()
        if comment:
            comment = ch != "\n"
        elif quote:
            if quote == '"' and ch == "\\" and not escaped:
                escaped = True
                continue
            if ch == quote and not escaped:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch == "#":
            comment = True
        elif ch in "[{":
            depth += 1
            if depth > MAX_FLOW_DEPTH:
                return match.start()
        elif ch in "]}":
            depth = max(0, depth - 1)
        escaped = False
    return None


def load_yaml(raw: bytes, path: str) -> YamlSource:
    """Parse one YAML document; problems land in ``diagnostics``, never raised."""
    source = YamlSource(path)
    if len(raw) > MAX_BYTES:
        source.error(Mark(1, 1), f"file is larger than {MAX_BYTES // (1024 * 1024)} MB")
        return source
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        good = raw[: exc.start].decode("utf-8", "replace")
        source.error(_line_col(good, len(good)), "file is not valid UTF-8")
        return source
    too_deep = _flow_depth_exceeded(text)
    if too_deep is not None:
        source.error(
            _line_col(text, too_deep), f"YAML nesting is deeper than {MAX_FLOW_DEPTH} levels"
        )
        return source
    loader: Any = None
    try:
        loader, node = _compose(text)
        if node is None:
            return source
        source.data = _Builder(loader, source).build(node, ())
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = Mark(mark.line + 1, mark.column + 1) if mark else Mark(1, 1)
        problem = (exc.problem or exc.context or "invalid YAML").removeprefix("but ")
        context = f" ({exc.context})" if exc.context and exc.problem else ""
        hint = ""
        lines = text.splitlines()
        if "flow" in (exc.context or "") and 0 < where.line <= len(lines):
            if "${" in lines[where.line - 1]:
                hint = "; quote values holding ${...} inside [ ] or { }"
        source.error(where, f"YAML syntax error: {problem}{context}{hint}")
        source.data = None
    except yaml.reader.ReaderError as exc:
        source.error(_line_col(text, exc.position), f"YAML syntax error: {exc.reason}")
        source.data = None
    except _TooLarge:
        source.error(
            Mark(1, 1),
            f"document expands to more than {MAX_NODES} nodes (alias expansion); refusing to load it",
        )
        source.data = None
    except RecursionError:
        source.error(Mark(1, 1), "YAML nesting is too deep")
        source.data = None
    finally:
        if loader is not None:
            loader.dispose()
    return source


def _compose(text: str) -> tuple[Any, Node | None]:
    """The node tree, composed by libyaml when PyYAML has it (several times faster).

    A document libyaml rejects is parsed again by the pure-Python parser, so error
    messages are the same with and without libyaml.
    """
    if _FastLoader is not None:
        fast = _FastLoader(text)
        try:
            return fast, fast.get_single_node()
        except yaml.YAMLError:
            fast.dispose()
    loader = _Loader(text)
    return loader, loader.get_single_node()
