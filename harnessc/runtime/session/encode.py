"""One JSON line exactly as pi writes it (``JSON.stringify`` + newline), UTF-8."""

from __future__ import annotations

import json
import math
import re
import secrets
from collections.abc import Callable
from typing import Any

__all__ = ["encode_line", "js_number", "replace_surrogates", "without_surrogates"]

_SURROGATE = re.compile("[\ud800-\udfff]")


def replace_surrogates(text: str) -> str:
    """``text`` with each lone surrogate (from a ``\\udXXX`` escape or a bad decode)
    replaced by U+FFFD, so it encodes as UTF-8."""
    return _SURROGATE.sub("\ufffd", text)


def without_surrogates(obj: Any) -> Any:
    if isinstance(obj, str):
        return replace_surrogates(obj)
    if isinstance(obj, dict):
        return {replace_surrogates(k): without_surrogates(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [without_surrogates(v) for v in obj]
    return obj


_encode = json.JSONEncoder(
    ensure_ascii=False, separators=(",", ":"), allow_nan=False, check_circular=False
).encode


def encode_line(obj: Any) -> bytes:
    """One JSON line exactly as pi writes it (``JSON.stringify`` + newline), UTF-8.

    Numbers are spelled as JavaScript spells them (``0`` not ``0.0``, ``0.000018`` not
    ``1.8e-05``), so copied pi entries keep their bytes. Non-finite floats become null
    (as in JavaScript); a lone surrogate (which no UTF-8 text can hold, and which a
    provider's JSON encoder would refuse later) is written as U+FFFD.
    """
    try:
        text = _encode(obj)
    except ValueError:
        obj = _finite(obj)
        text = _encode(obj)
    # ".0", "e-" and "e+" are in every text _FLOAT_HINT matches: three substring tests
    # rule out most lines faster than the expression scans one
    if (".0" in text or "e-" in text or "e+" in text) and _FLOAT_HINT.search(text):
        text = _with_js_numbers(obj, text)
    try:
        return text.encode("utf-8") + b"\n"
    except UnicodeEncodeError:
        return replace_surrogates(text).encode("utf-8") + b"\n"


# Python float spellings JavaScript writes differently: "5.0", "1e-05", "1.5e+16"
_FLOAT_HINT = re.compile(r"[0-9]\.0(?![0-9])|[0-9]e[-+]")
_SENTINEL = "\x00f" + secrets.token_hex(4)


def js_number(value: float) -> str:
    """``value`` as JavaScript's ``Number.prototype.toString`` writes it."""
    if value == 0:
        return "0"
    from decimal import Decimal  # only for unusual floats; decimal costs ms to import

    sign, digits, exponent = Decimal(repr(value)).as_tuple()
    text = "".join(map(str, digits)).rstrip("0") or "0"
    point = len(digits) + int(exponent)  # value = 0.<text> x 10**point
    size = len(text)
    if size <= point <= 21:
        out = text + "0" * (point - size)
    elif 0 < point <= 21:
        out = f"{text[:point]}.{text[point:]}"
    elif -6 < point <= 0:
        out = "0." + "0" * -point + text
    else:
        mantissa = text[0] + ("." + text[1:] if size > 1 else "")
        out = f"{mantissa}e{'+' if point - 1 >= 0 else '-'}{abs(point - 1)}"
    return ("-" if sign else "") + out


def _with_js_numbers(obj: Any, text: str) -> str:
    numbers: list[str] = []

    def swap(value: Any) -> Any:
        if type(value) is float:
            js = js_number(value)
            if js != repr(value):
                numbers.append(js)
                return f"{_SENTINEL}{len(numbers) - 1}\x00"
        return value

    swapped = _map_leaves(obj, swap)
    if not numbers:
        return text
    text = _encode(swapped)
    for i, js in enumerate(numbers):
        text = text.replace(_encode(f"{_SENTINEL}{i}\x00"), js, 1)
    return text


def _finite(obj: Any) -> Any:
    return _map_leaves(obj, lambda v: None if isinstance(v, float) and not math.isfinite(v) else v)


def _map_leaves(obj: Any, leaf: Callable[[Any], Any]) -> Any:
    """A copy of a JSON-like value with ``leaf`` applied to every non-container value.

    Iterative, so arguments nested thousands of levels deep (a hostile model's tool
    call) are recorded instead of raising RecursionError.
    """
    if not isinstance(obj, dict | list | tuple):
        return leaf(obj)
    root: Any = {} if isinstance(obj, dict) else []
    stack: list[tuple[Any, Any]] = [(obj, root)]
    while stack:
        source, target = stack.pop()
        items = source.items() if isinstance(source, dict) else enumerate(source)
        for key, value in items:
            if isinstance(value, dict | list | tuple):
                child: Any = {} if isinstance(value, dict) else []
                stack.append((value, child))
            else:
                child = leaf(value)
            if isinstance(target, dict):
                target[key] = child
            else:
                target.append(child)
    return root
