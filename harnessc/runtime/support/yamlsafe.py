"""Safe YAML for the runtime and the spec loader: PyYAML's safe loader with the YAML 1.2
core schema (``yes``/``on`` are strings, no timestamps, ``0x`` integers), as the
``yaml`` package pi and the Agent Skills tools use reads it.

PyYAML is imported on first use only: an agent without skills or templates never loads
it (about 15-30 ms of import time). ``safe_load`` adds what frontmatter needs beyond the
loader: duplicate keys are errors (PyYAML keeps the last silently), aliases are capped
(``MAX_ALIASES``), the text size is capped (``MAX_BYTES``), and errors carry the line.
"""

from __future__ import annotations

import functools
import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import yaml

__all__ = ["MAX_ALIASES", "MAX_BYTES", "YamlError", "core_loaders", "safe_load"]

MAX_BYTES = 1024 * 1024
MAX_ALIASES = 100  # as the JavaScript ``yaml`` package's default maxAliasCount


class YamlError(ValueError):
    """YAML that cannot be loaded; ``line`` is 1-based (None when unknown)."""

    def __init__(self, message: str, line: int | None = None) -> None:
        super().__init__(f"line {line}: {message}" if line else message)
        self.message = message
        self.line = line


_CORE_RESOLVERS: tuple[tuple[str, str, str], ...] = (
    ("tag:yaml.org,2002:bool", r"^(?:true|True|TRUE|false|False|FALSE)$", "tTfF"),
    (
        "tag:yaml.org,2002:int",
        r"^(?:[-+]?(?:0|[1-9][0-9_]*)|0x[0-9a-fA-F_]+)$",
        "-+0123456789",
    ),
    (
        "tag:yaml.org,2002:float",
        r"""^(?:[-+]?(?:\.[0-9][0-9_]*|[0-9][0-9_]*\.[0-9_]*)(?:[eE][-+]?[0-9]+)?
        |[-+]?[0-9][0-9_]*[eE][-+]?[0-9]+
        |[-+]?\.(?:inf|Inf|INF)
        |\.(?:nan|NaN|NAN))$""",
        "-+0123456789.",
    ),
    ("tag:yaml.org,2002:null", r"^(?:~|null|Null|NULL|)$", "~nN"),
    ("tag:yaml.org,2002:merge", r"^(?:<<)$", "<"),
)


@functools.cache
def core_loaders() -> tuple[type[yaml.SafeLoader], type[yaml.CSafeLoader] | None]:
    """(pure-Python loader, libyaml loader or None): SafeLoader with core-schema resolvers."""
    import yaml

    class CoreLoader(yaml.SafeLoader):
        """SafeLoader with YAML 1.2 core-schema scalar resolution."""

        yaml_implicit_resolvers: dict[Any, list[tuple[str, re.Pattern[str]]]] = {}

    for tag, pattern, first in _CORE_RESOLVERS:
        starts = [*first, ""] if tag.endswith(":null") else list(first)
        CoreLoader.add_implicit_resolver(tag, re.compile(pattern, re.X), starts)
    fast: type[yaml.CSafeLoader] | None = None
    if getattr(yaml, "__with_libyaml__", False):

        class FastCoreLoader(yaml.CSafeLoader):
            """libyaml's parser with the same resolvers."""

        FastCoreLoader.yaml_implicit_resolvers = CoreLoader.yaml_implicit_resolvers
        fast = FastCoreLoader
    return CoreLoader, fast


@functools.cache
def _checked_loader() -> type[Any]:
    import yaml
    from yaml.nodes import MappingNode

    base, _ = core_loaders()

    class CheckedLoader(base):  # type: ignore[misc, valid-type]
        """Core schema, duplicate keys refused, aliases counted."""

        def __init__(self, stream: str) -> None:
            super().__init__(stream)
            self.aliases = 0

        def compose_node(self, parent: Any, index: Any) -> Any:
            if self.check_event(yaml.AliasEvent):
                self.aliases += 1
                if self.aliases > MAX_ALIASES:
                    mark = self.peek_event().start_mark
                    raise YamlError(f"more than {MAX_ALIASES} aliases", mark.line + 1)
            return super().compose_node(parent, index)

        def construct_mapping(self, node: Any, deep: bool = False) -> Any:
            if isinstance(node, MappingNode):
                seen: set[Any] = set()
                for key_node, _ in node.value:
                    key = self.construct_object(key_node, deep=True)
                    try:
                        duplicate = key in seen
                    except TypeError:
                        continue  # an unhashable key: the base class reports it
                    if duplicate:
                        line = key_node.start_mark.line + 1
                        raise YamlError(f"duplicate key {key!r}", line)
                    seen.add(key)
            return super().construct_mapping(node, deep=deep)

    return CheckedLoader


_UNCLOSED = {
    "while scanning a quoted scalar": "a quoted string is not closed",
    "while parsing a flow sequence": "a [ list is not closed",
    "while parsing a flow mapping": "a { mapping is not closed",
}


def _describe(context: str, problem: str) -> tuple[str, bool]:
    """PyYAML's context and problem, plainer where a common slip is recognised (then
    True: something opened is never closed)."""
    if "end of stream" in problem or "<stream end>" in problem:
        for start, text in _UNCLOSED.items():
            if context.startswith(start):
                return text, True
    return " ".join(part for part in (context, problem) if part), False


def safe_load(text: str, *, first_line: int = 1) -> Any:
    """Load one YAML document; YamlError (with the line, counted from ``first_line``)."""
    import yaml

    if len(text.encode("utf-8", "surrogatepass")) > MAX_BYTES:
        raise YamlError(f"larger than {MAX_BYTES // 1024} KB")
    loader = _checked_loader()(text)
    try:
        return loader.get_single_data()
    except YamlError as exc:
        line = exc.line + first_line - 1 if exc.line else None
        raise YamlError(exc.message, line) from None
    except yaml.MarkedYAMLError as exc:
        what, unclosed = _describe(exc.context or "", exc.problem or "")
        # an unclosed string or list is reported where it opens, not at the end
        mark = (exc.context_mark if unclosed else None) or exc.problem_mark or exc.context_mark
        line = mark.line + first_line if mark is not None else None
        raise YamlError(what or str(exc), line) from None
    except yaml.YAMLError as exc:
        raise YamlError(str(exc)) from None
    except RecursionError:
        raise YamlError("nested too deeply") from None
    finally:
        loader.dispose()
