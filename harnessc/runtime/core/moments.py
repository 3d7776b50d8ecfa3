"""The catalog of hook moments: every name a moment goes by, in one table.

Each ``Moment`` is one point of the loop a handler can hook: its canonical name (seed
000's snake_case, also the event type in the stream), whether handlers act (their result
changes what the loop does) or observe, the names the other designs give it (seed 004's
state-machine topic, older aliases, dotted event names), the Claude Code events its
command hooks receive, and the text of its row in docs/hooks.md.

Derived from ``MOMENTS``: the event aliases (``core.events.EVENT_ALIASES``), the acting
moments and hook aliases (``core.hooks``), the Claude Code names
(``extensions.claude_events``) and the tables of docs/hooks.md
(``harnessc.compiler.hooks_page``). Adding a moment is one entry here, its record (an
``Event`` subclass, or a hook event and result type for an acting moment) and the place
the loop fires it; tests/runtime/test_moments.py finds that place.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from msgspec import Struct

from harnessc.runtime.core.messages import AssistantMessage

__all__ = ["MOMENTS", "ClaudeEvent", "Moment", "Named", "moment_named"]


def _assistant(event: Any) -> bool:
    return isinstance(getattr(event, "message", None), AssistantMessage)


def _succeeded(event: Any) -> bool:
    return not getattr(event, "is_error", False)


def _failed(event: Any) -> bool:
    return bool(getattr(event, "is_error", False))


class Named(Struct, frozen=True):
    """A dotted event name (``tool.call``); ``only``: the events of the moment it names."""

    name: str
    only: Callable[[Any], bool] | None = None


class ClaudeEvent(Struct, frozen=True):
    """A Claude Code hook event a command hook at the moment receives.

    ``only``: the moment's events it reports (the first that accepts one names it);
    ``case`` and ``fields`` are its docs row (when it applies; its own JSON fields).
    """

    name: str
    fields: str
    case: str = ""
    only: Callable[[Any], bool] | None = None


class Moment(Struct, frozen=True):
    name: str
    acting: bool  # handlers' results change what the loop does (else they observe)
    when: str  # docs: when it fires
    returns: str = ""  # docs, acting moments: what a handler may return
    seed_004: str = ""  # seed 004's topic for it (the name or one of the aliases)
    aliases: tuple[str, ...] = ()  # other names: seed 004's topics, older names
    dotted: tuple[Named, ...] = ()
    claude: tuple[ClaudeEvent, ...] = ()


MOMENTS: tuple[Moment, ...] = (
    # -- acting moments -------------------------------------------------------------
    Moment(
        "before_agent_start",
        acting=True,
        when="a prompt was accepted, before the run's first model call",
        returns="`BeforeAgentStartResult(messages=..., system_prompt=...)`",
        seed_004="before_plan",
        aliases=("before_plan",),
        claude=(
            ClaudeEvent("UserPromptSubmit", "`prompt`"),
            ClaudeEvent(
                "SessionStart",
                "`source` (`startup`, or `resume` when the session has messages), `model`",
                case="first prompt of a harness (settings files only)",
            ),
        ),
    ),
    Moment(
        "context",
        acting=True,
        when="before every model call, with the messages to send",
        returns="`ContextResult(messages=...)`: what this call sends (the session keeps its own)",
        seed_004="before_step",
        aliases=("before_step",),
    ),
    Moment(
        "before_provider_request",
        acting=True,
        when="before every provider request",
        returns="`BeforeProviderRequestResult(stream_options={...})`",
    ),
    Moment(
        "before_provider_payload",
        acting=True,
        when="with the JSON body about to be sent",
        returns="any value: the body to send instead",
    ),
    Moment(
        "after_provider_response",
        acting=True,
        when="the response status and headers arrived",
        returns="nothing (observes)",
    ),
    Moment(
        "after_plan",
        acting=True,
        when="the reply's tool calls, before any runs",
        returns="`AfterPlanResult(tool_calls=...)`: the calls to run",
        seed_004="after_plan",
    ),
    Moment(
        "tool_call",
        acting=True,
        when="each tool call, before it runs",
        returns=(
            "`ToolCallResult(block=True, reason=...)`, `ToolCallResult(input={...})` (new "
            "arguments), `True`/`False` (allow/block), `PauseRequest(reason)`"
        ),
        seed_004="before_tool_call",
        aliases=("before_tool_call",),
        claude=(ClaudeEvent("PreToolUse", "`tool_name`, `tool_input`, `tool_use_id`"),),
    ),
    Moment(
        "tool_result",
        acting=True,
        when="each tool result, before the model sees it",
        returns=(
            "`ToolResultPatch(content=..., details=..., is_error=..., terminate=...)`, "
            "`PauseRequest(reason)`"
        ),
        seed_004="after_tool_call",
        aliases=("after_tool_call",),
        claude=(
            ClaudeEvent(
                "PostToolUse",
                "`tool_name`, `tool_input`, `tool_use_id`, `tool_response` (`content`, `details`)",
                case="successful call",
                only=_succeeded,
            ),
            ClaudeEvent(
                "PostToolUseFailure",
                "`tool_name`, `tool_input`, `tool_use_id`, `error`, `is_interrupt` (false)",
                case="failed call",
                only=_failed,
            ),
        ),
    ),
    Moment(
        "before_stop",
        acting=True,
        when="the model replied without tool calls: the run would end",
        returns="`StopDecision(continue_=True, messages=[...])`, `PauseRequest(reason)`",
        aliases=("turn_stop",),
        claude=(
            ClaudeEvent(
                "Stop",
                "`stop_hook_active` (true while the run goes on because a Stop hook blocked), "
                "`last_assistant_message`",
            ),
        ),
    ),
    Moment(
        "on_budget_exceeded",
        acting=True,
        when="a hard budget limit was hit",
        returns="a `Budget` with higher limits: the run goes on",
        seed_004="on_budget_exceeded",
        aliases=("budget_exceeded",),
    ),
    Moment(
        "session_before_compact",
        acting=True,
        when="before a compaction",
        returns="`SessionBeforeCompactResult(cancel=True)`, or `compaction=` your own summary",
        claude=(
            ClaudeEvent(
                "PreCompact",
                "`trigger` (`manual` with `/compact` instructions, else `auto`), "
                "`custom_instructions`",
            ),
        ),
    ),
    Moment(
        "session_before_tree",
        acting=True,
        when="before a move in the session tree",
        returns="`SessionBeforeTreeResult(cancel=..., summary=..., label=...)`",
    ),
    # -- event moments: the events of the stream ---------------------------------------
    Moment(
        "agent_start",
        acting=False,
        when="a run started",
        dotted=(Named("session.start"),),
    ),
    Moment(
        "agent_end",
        acting=False,
        when="a run ended (`status` done, error or aborted)",
        seed_004="on_complete",
        aliases=("on_complete",),
        dotted=(Named("session.complete"),),
    ),
    Moment("turn_start", acting=False, when="a turn starts", dotted=(Named("step.start"),)),
    Moment(
        "turn_end",
        acting=False,
        when="a turn ended (its reply and tool results)",
        seed_004="after_step",
        aliases=("after_step",),
        dotted=(Named("step.end"),),
    ),
    Moment("message_start", acting=False, when="a message began"),
    Moment("message_update", acting=False, when="a message streamed a delta"),
    Moment(
        "message_end",
        acting=False,
        when="a message was complete (`plan.draft`: assistant messages only)",
        dotted=(Named("plan.draft", only=_assistant),),
    ),
    Moment(
        "plan_commit",
        acting=False,
        when="the tool calls about to run (after `after_plan`)",
        dotted=(Named("plan.commit"),),
    ),
    Moment(
        "tool_execution_start",
        acting=False,
        when="a tool call starts",
        dotted=(Named("tool.call"),),
    ),
    Moment(
        "tool_execution_update",
        acting=False,
        when="a running tool reported partial output",
    ),
    Moment(
        "tool_execution_end",
        acting=False,
        when="a tool call finished (`tool.result`: successful ones, `tool.error`: failed ones)",
        dotted=(Named("tool.result", only=_succeeded), Named("tool.error", only=_failed)),
    ),
    Moment(
        "budget_warn",
        acting=False,
        when="a soft threshold was passed, or a hard limit hit",
        dotted=(Named("budget.warn"),),
    ),
    Moment(
        "agent_pause",
        acting=False,
        when="the run paused (external tool, budget, hook)",
        seed_004="on_pause",
        aliases=("on_pause",),
        dotted=(Named("session.pause"),),
        claude=(
            ClaudeEvent(
                "Notification",
                "`message` (the pause reason), `title`, `notification_type` "
                "(`permission_prompt` for an `ask`, else `idle_prompt`)",
            ),
        ),
    ),
    Moment("agent_resume", acting=False, when="a paused run continues"),
    Moment(
        "state_change",
        acting=False,
        when="the loop moved between IDLE, PLANNING, EXECUTING, AWAITING_TOOL, REFLECTING, DONE",
    ),
    Moment(
        "error",
        acting=False,
        when="a provider call, hook or extension failed (contained)",
        seed_004="on_error",
        aliases=("on_error",),
    ),
    Moment("notice", acting=False, when="a notice (`level` info or warning) from a part"),
    Moment("retry", acting=False, when="a provider request is tried again"),
    Moment("provider_response", acting=False, when="a provider response's HTTP status"),
    Moment("session_compact", acting=False, when="the session was compacted"),
    Moment("session_tree", acting=False, when="the session moved in its tree"),
    Moment("model_update", acting=False, when="the model changed"),
    Moment(
        "model_fallback",
        acting=False,
        when=(
            "a model request failed and goes to the next fallback model (`from_model`, "
            "`to_model`, `reason`, `error`)"
        ),
    ),
    Moment("thinking_level_update", acting=False, when="the thinking level changed"),
    Moment("tools_update", acting=False, when="the active tools changed"),
    Moment(
        "resources_update",
        acting=False,
        when="the skills, prompt templates or context files changed",
    ),
    Moment("queue_update", acting=False, when="the steering or follow-up queue changed"),
    Moment("abort", acting=False, when="the run was aborted"),
    Moment(
        "subagent",
        acting=False,
        when="an event of a sub-agent (see [sub-agents](subagents.md)), with its agent path",
    ),
    Moment(
        "handover_progress",
        acting=False,
        when=(
            "a hand-over's sub-agent started, began a turn, got a reply, paused or ended "
            "(`agent_path`, `turn`, `input_tokens`, `output_tokens`, `status`)"
        ),
    ),
)

_BY_NAME: dict[str, Moment] = {m.name: m for m in MOMENTS}


def moment_named(name: str) -> Moment | None:
    """The catalog entry of a canonical moment name (None for any other name)."""
    return _BY_NAME.get(name)
