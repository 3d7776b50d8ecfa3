"""The catalog of hook moments (core/moments.py) is the one place a moment is named.

Every moment of the catalog is fired somewhere in the runtime (an acting moment's
handlers are run by name, an event moment's record is built), every moment the runtime
fires is in the catalog, the tables derived from it agree with it, and the tables of
docs/hooks.md are its current rendering.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

from harnessc.compiler.hooks_page import HOOKS_PAGE, refresh, tables
from harnessc.runtime.agent.hooks import HOOK_REGISTRY
from harnessc.runtime.core.events import (
    EVENT_ALIASES,
    EVENT_TYPES,
    Event,
    ToolExecutionEndEvent,
)
from harnessc.runtime.core.hooks import (
    ACTING_HOOKS,
    HOOK_ALIASES,
    HOOK_NAMES,
    MOMENT_RESULT_TYPES,
    SEED_004_TOPICS,
    ToolResultEvent,
    canonical_hook_name,
)
from harnessc.runtime.core.messages import AssistantMessage, UserMessage
from harnessc.runtime.core.moments import MOMENTS, moment_named
from harnessc.runtime.extensions.claude_events import CLAUDE_EVENTS, claude_event_name

RUNTIME = Path(__file__).resolve().parents[2] / "harnessc" / "runtime"
ACTING = [m for m in MOMENTS if m.acting]
EVENTS = [m for m in MOMENTS if not m.acting]


def _sources(*skip: str) -> str:
    """The runtime's source (outside ``skip``, paths relative to harnessc/runtime)."""
    return "\n".join(
        path.read_text(encoding="utf-8")
        for path in sorted(RUNTIME.rglob("*.py"))
        if str(path.relative_to(RUNTIME)) not in skip
    )


# Where an acting moment's handlers run: ``hooks.run("tool_call", ...)`` in the loop,
# ``harness.call_hooks("session_before_compact", ...)`` beside it.
RUN_BY_NAME = re.compile(r"(?:hooks\.run|\.call_hooks)\(\s*\"(\w+)\"")


@pytest.mark.parametrize("moment", [m.name for m in ACTING])
def test_every_acting_moment_is_run_somewhere(moment: str) -> None:
    assert moment in RUN_BY_NAME.findall(_sources()), f"no place runs {moment!r} hooks"


@pytest.mark.parametrize("moment", [m.name for m in EVENTS])
def test_every_event_moment_is_built_somewhere(moment: str) -> None:
    name = EVENT_TYPES[moment].__name__
    built = re.search(rf"\b{name}\(", _sources("core/events.py"))
    assert built, f"no place builds a {name} (the {moment!r} event)"


def test_the_runtime_runs_no_moment_outside_the_catalog() -> None:
    run = set(RUN_BY_NAME.findall(_sources()))
    assert run <= set(ACTING_HOOKS), sorted(run - set(ACTING_HOOKS))
    assert {cls.type for cls in Event.__subclasses__()} == set(EVENT_TYPES)


def test_each_name_names_one_moment() -> None:
    names = Counter(
        name for m in MOMENTS for name in (m.name, *m.aliases, *(named.name for named in m.dotted))
    )
    assert [name for name, count in names.items() if count > 1] == []
    for m in MOMENTS:
        assert not m.seed_004 or m.seed_004 in (m.name, *m.aliases)
        assert not m.returns or m.acting
        for name in (m.name, *m.aliases):
            assert canonical_hook_name(name) == m.name
        for named in m.dotted:
            assert EVENT_ALIASES[named.name][0] == m.name
        assert moment_named(m.name) is m
    assert moment_named("before_plan") is None  # an alias is not a moment's name


def test_the_tables_are_the_catalogs() -> None:
    assert ACTING_HOOKS == tuple(m.name for m in ACTING)
    assert list(EVENT_TYPES) == [m.name for m in EVENTS]
    assert set(HOOK_REGISTRY) == set(ACTING_HOOKS)
    # before_provider_payload takes any value (the body to send), so it lists no type
    assert set(MOMENT_RESULT_TYPES) == set(ACTING_HOOKS) - {"before_provider_payload"}
    assert len(SEED_004_TOPICS) == 10 and set(SEED_004_TOPICS) <= HOOK_NAMES
    assert HOOK_ALIASES["before_tool_call"] == "tool_call"
    assert HOOK_NAMES == {
        name for m in MOMENTS for name in (m.name, *m.aliases, *(named.name for named in m.dotted))
    }


def test_the_dotted_filters_pick_their_events() -> None:
    draft, only = EVENT_ALIASES["plan.draft"]
    assert draft == "message_end" and only is not None
    end = EVENT_TYPES["message_end"]
    assert only(end(message=AssistantMessage())) and not only(end(message=UserMessage("hi")))
    _, succeeded = EVENT_ALIASES["tool.result"]
    _, failed = EVENT_ALIASES["tool.error"]
    assert succeeded is not None and failed is not None
    assert succeeded(ToolExecutionEndEvent()) and not failed(ToolExecutionEndEvent())
    assert failed(ToolExecutionEndEvent(is_error=True))


def test_claude_code_names_come_from_the_catalog() -> None:
    assert CLAUDE_EVENTS == {
        "PreToolUse": "tool_call",
        "PostToolUse": "tool_result",
        "PostToolUseFailure": "tool_result",
        "UserPromptSubmit": "before_agent_start",
        "SessionStart": "before_agent_start",
        "Stop": "before_stop",
        "PreCompact": "session_before_compact",
        "Notification": "agent_pause",
    }
    result = ToolResultEvent("c1", "read", {}, [], None, is_error=False)
    assert claude_event_name("tool_result", result) == "PostToolUse"
    result.is_error = True
    assert claude_event_name("tool_result", result) == "PostToolUseFailure"
    assert claude_event_name("before_agent_start", None) == "UserPromptSubmit"
    assert claude_event_name("turn_end", None) == "turn_end"


def test_the_hooks_page_tables_are_current() -> None:
    page = HOOKS_PAGE.read_text(encoding="utf-8")
    assert refresh(page) == page, "run python -m harnessc.compiler.hooks_page"
    for name, table in tables().items():
        assert f"<!-- moments:{name} -->\n{table}<!-- /moments:{name} -->" in page


def test_a_stale_table_is_rewritten() -> None:
    page = HOOKS_PAGE.read_text(encoding="utf-8")
    stale = page.replace("| `agent_resume` | | a paused run continues |\n", "")
    assert stale != page and refresh(stale) == page
    with pytest.raises(ValueError, match="no table is called 'nothing'"):
        refresh("<!-- moments:nothing -->\n<!-- /moments:nothing -->")
