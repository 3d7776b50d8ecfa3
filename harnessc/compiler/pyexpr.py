"""Python expressions as small trees, printed the way ``ruff format`` prints them.

Every value that comes from a spec becomes a ``Lit`` and is printed by
``py_literal`` (an escaped literal, never raw text). ``Code`` is only ever built by
the compiler from its own fixed fragments and such literals.

Layout: an expression stays on one line when it fits in ``LINE_LENGTH``; otherwise
its brackets open and every item goes on its own line with a trailing comma (ruff
keeps such "magic trailing comma" layouts as they are). This is what makes the
output ruff-format clean without running ruff.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "LINE_LENGTH",
    "Call",
    "Code",
    "DictExpr",
    "Expr",
    "ListExpr",
    "Lit",
    "TupleExpr",
    "from_json",
    "layout",
    "py_literal",
    "py_string",
    "string_lines",
]

LINE_LENGTH = 100
INDENT = 4


def py_string(text: str) -> str:
    """A quoted literal that evaluates to ``text`` and that ruff leaves unchanged."""
    if text.isprintable() and "\\" not in text and '"' not in text:
        return f'"{text}"'  # the common case: nothing to escape
    quote = "'" if text.count('"') > text.count("'") else '"'
    out = [quote]
    for ch in text:
        if ch == "\\":
            out.append("\\\\")
        elif ch == quote:
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\t":
            out.append("\\t")
        elif ch.isprintable() or ch == " ":
            out.append(ch)
        else:
            code = ord(ch)
            if code < 0x100:
                out.append(f"\\x{code:02x}")
            elif code < 0x10000:
                out.append(f"\\u{code:04x}")
            else:
                out.append(f"\\U{code:08x}")
    out.append(quote)
    return "".join(out)


def py_literal(value: Any) -> str:
    """Literal text of a JSON-like scalar; large ints get ``_`` separators."""
    if value is None or isinstance(value, bool):
        return repr(value)
    if isinstance(value, int):
        return f"{value:_}" if abs(value) >= 10_000 else str(value)
    if isinstance(value, float):
        text = repr(value)
        if text in ("inf", "-inf", "nan"):
            raise ValueError(f"not a finite number: {text}")
        return text.replace("e+", "e")
    if isinstance(value, str):
        return py_string(value)
    raise TypeError(f"no literal for {type(value).__name__}")


def string_lines(text: str) -> list[str]:
    """``text`` cut after each newline, as literals (for implicit concatenation)."""
    pieces = text.splitlines(keepends=True)
    # splitlines also cuts at \r, \x0b, \u2028 ...; only cut after a real "\n".
    parts: list[str] = []
    for piece in pieces:
        if parts and not parts[-1].endswith("\n"):
            parts[-1] += piece
        else:
            parts.append(piece)
    return [py_string(part) for part in parts or [""]]


class Expr:
    """Base of the expression tree."""

    def flat(self) -> str:
        raise NotImplementedError

    def brackets(self) -> tuple[str, str, list[tuple[str, Expr]]] | None:
        """Opening text, closing text and (prefix, item) pairs, for exploding."""
        return None


@dataclass(slots=True)
class Lit(Expr):
    value: Any

    def flat(self) -> str:
        return py_literal(self.value)


@dataclass(slots=True)
class Code(Expr):
    """Compiler-made code on one line (names, attribute paths, joined literals)."""

    text: str

    def flat(self) -> str:
        return self.text


@dataclass(slots=True)
class Call(Expr):
    func: str
    args: list[Expr] = field(default_factory=list)
    kwargs: list[tuple[str, Expr]] = field(default_factory=list)

    def flat(self) -> str:
        parts = [a.flat() for a in self.args] + [f"{k}={v.flat()}" for k, v in self.kwargs]
        return f"{self.func}({', '.join(parts)})"

    def brackets(self) -> tuple[str, str, list[tuple[str, Expr]]] | None:
        items = [("", a) for a in self.args] + [(f"{k}=", v) for k, v in self.kwargs]
        return (f"{self.func}(", ")", items) if items else None


@dataclass(slots=True)
class ListExpr(Expr):
    items: list[Expr] = field(default_factory=list)

    def flat(self) -> str:
        return "[" + ", ".join(i.flat() for i in self.items) + "]"

    def brackets(self) -> tuple[str, str, list[tuple[str, Expr]]] | None:
        return ("[", "]", [("", i) for i in self.items]) if self.items else None


@dataclass(slots=True)
class TupleExpr(Expr):
    items: list[Expr] = field(default_factory=list)

    def flat(self) -> str:
        if len(self.items) == 1:
            return f"({self.items[0].flat()},)"
        return "(" + ", ".join(i.flat() for i in self.items) + ")"

    def brackets(self) -> tuple[str, str, list[tuple[str, Expr]]] | None:
        return ("(", ")", [("", i) for i in self.items]) if self.items else None


@dataclass(slots=True)
class DictExpr(Expr):
    items: list[tuple[Expr, Expr]] = field(default_factory=list)

    def flat(self) -> str:
        return "{" + ", ".join(f"{k.flat()}: {v.flat()}" for k, v in self.items) + "}"

    def brackets(self) -> tuple[str, str, list[tuple[str, Expr]]] | None:
        pairs = [(f"{k.flat()}: ", v) for k, v in self.items]
        return ("{", "}", pairs) if pairs else None


def layout(expr: Expr, indent: int, lead: int, trail: int = 0) -> str:
    """``expr`` as it goes after ``lead`` columns on a line indented ``indent``,
    followed by ``trail`` more characters; continuation lines carry their indent."""
    text = expr.flat()
    if lead + len(text) + trail <= LINE_LENGTH and "\n" not in text:
        return text
    parts = expr.brackets()
    if parts is None:
        return text
    opening, closing, items = parts
    inner = indent + INDENT
    lines = [opening]
    for prefix, item in items:
        body = layout(item, inner, inner + len(prefix), 1)
        lines.append(" " * inner + prefix + body + ",")
    lines.append(" " * indent + closing)
    return "\n".join(lines)


def from_json(value: Any) -> Expr:
    """A JSON-like value (dicts, lists, scalars) as an expression of literals."""
    if isinstance(value, dict):
        return DictExpr([(Lit(str(k)), from_json(v)) for k, v in value.items()])
    if isinstance(value, list | tuple):
        return ListExpr([from_json(v) for v in value])
    return Lit(value)
