"""``harnessc check`` reads the agent cards of a spec's remote A2A sub-agents
(``agents: {name: {a2a: URL}}``): the agent's name and its skills, or why the card
cannot be read (a variable that is not set, a server that does not answer). A card that
cannot be read is a note, not an error: the remote agent may simply not run yet."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from harnessc.spec.envref import EnvRef, split_env_refs

__all__ = ["CARD_PATH", "card_url", "describe_card", "read_card"]

CARD_PATH = "/.well-known/agent-card.json"


def _expand(text: str, environ: Mapping[str, str]) -> tuple[str, list[str]]:
    """``text`` with its ${VAR} references read from ``environ``; the unset names."""
    out: list[str] = []
    missing: list[str] = []
    for piece in split_env_refs(text):
        if isinstance(piece, EnvRef):
            value = environ.get(piece.name)
            if value is None:
                value = piece.default if piece.default is not None else ""
                if piece.default is None:
                    missing.append(piece.name)
            out.append(value)
        else:
            out.append(piece)
    return "".join(out), missing


def card_url(url: str) -> str:
    """The card's address of an agent's URL (a URL ending in .json is the card's)."""
    base = url.rstrip("/")
    return base if base.endswith(".json") else base + CARD_PATH


def read_card(
    url: str,
    headers: Mapping[str, str],
    environ: Mapping[str, str] | None = None,
    timeout_s: float = 10.0,
) -> dict[str, Any] | str:
    """The agent card as JSON, or why it cannot be read (a line for the user; a header
    value is never part of it)."""
    import httpx

    environ = os.environ if environ is None else environ
    address, missing = _expand(url, environ)
    sent: dict[str, str] = {}
    for name, value in headers.items():
        sent[name], unset = _expand(value, environ)
        missing += unset
    if missing:
        return f"not read: {', '.join(sorted(set(missing)))} not set"
    where = card_url(address)
    try:
        response = httpx.get(where, headers=sent, timeout=timeout_s, follow_redirects=True)
    except httpx.HTTPError as exc:
        return f"cannot read {where}: {type(exc).__name__}"
    if response.status_code != 200:
        return f"cannot read {where}: HTTP {response.status_code}"
    try:
        card = response.json()
    except ValueError:
        return f"cannot read {where}: not JSON"
    return card if isinstance(card, dict) else f"cannot read {where}: not an agent card"


def describe_card(card: dict[str, Any]) -> str:
    """``'helper' (3 skills: a, b, c)``."""
    name = str(card.get("name") or "?")
    skills = [s for s in card.get("skills") or [] if isinstance(s, dict)]
    names = ", ".join(str(s.get("name") or s.get("id") or "?") for s in skills)
    count = f"{len(skills)} skill{'s' if len(skills) != 1 else ''}"
    return f"{name!r} ({count}: {names})" if skills else f"{name!r} (no skills)"
