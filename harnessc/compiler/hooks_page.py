"""The tables of docs/hooks.md, rendered from the catalog of moments (``core.moments``).

    python -m harnessc.compiler.hooks_page [--check]

Each table stands between ``<!-- moments:NAME -->`` and ``<!-- /moments:NAME -->`` in the
page (NAME: ``acting``, ``events``, ``claude``); the rest of the page is prose written
by hand. Without ``--check`` the page is rewritten in place; with it, the command exits
1 when the page differs from the rendering.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from harnessc.runtime.core.moments import MOMENTS, Moment

__all__ = ["HOOKS_PAGE", "refresh", "tables"]

HOOKS_PAGE = Path(__file__).resolve().parents[2] / "docs" / "hooks.md"

_REGION = re.compile(r"(<!-- moments:(\w+) -->\n)(.*?)(<!-- /moments:\2 -->)", re.S)


def _names(names: list[str]) -> str:
    return ", ".join(f"`{name}`" for name in names)


def _row(*cells: str) -> str:
    return "|" + "|".join(f" {cell} " if cell else " " for cell in cells) + "|"


def _also(moment: Moment) -> str:
    return _names([*moment.aliases, *(named.name for named in moment.dotted)])


def _acting() -> list[str]:
    rows = ["| moment | also accepted | when | a handler may return |", "|---|---|---|---|"]
    for m in MOMENTS:
        if m.acting:
            rows.append(_row(f"`{m.name}`", _also(m), m.when, m.returns))
    return rows


def _events() -> list[str]:
    rows = ["| moment | also accepted | when |", "|---|---|---|"]
    for m in MOMENTS:
        if not m.acting:
            rows.append(_row(f"`{m.name}`", _also(m), m.when))
    return rows


def _claude() -> list[str]:
    rows = ["| harnessc moment | `hook_event_name` | event fields |", "|---|---|---|"]
    for m in MOMENTS:
        for event in m.claude:
            where = f"`{m.name}`, {event.case}" if event.case else f"`{m.name}`"
            rows.append(_row(where, f"`{event.name}`", event.fields))
    rows.append(
        "| any other moment | the moment (`turn_end`, ...) | the moment's fields under `harnessc` |"
    )
    return rows


def tables() -> dict[str, str]:
    """Each region's Markdown table (with its final newline)."""
    return {
        name: "\n".join(rows) + "\n"
        for name, rows in (("acting", _acting()), ("events", _events()), ("claude", _claude()))
    }


def refresh(page: str) -> str:
    """``page`` with every moments region holding its fresh table."""
    made = tables()

    def fill(match: re.Match[str]) -> str:
        name = match.group(2)
        if name not in made:
            raise ValueError(f"docs/hooks.md: no table is called {name!r}")
        return match.group(1) + made[name] + match.group(4)

    return _REGION.sub(fill, page)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when the page is stale")
    options = parser.parse_args(argv)
    page = HOOKS_PAGE.read_text(encoding="utf-8")
    fresh = refresh(page)
    if options.check:
        if fresh != page:
            print("docs/hooks.md is stale: run python -m harnessc.compiler.hooks_page")
            return 1
        return 0
    if fresh != page:
        HOOKS_PAGE.write_text(fresh, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
