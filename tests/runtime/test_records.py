"""Events, hook types, options, budgets, catalog entries, resources, tool results,
messages, provider requests and the loop's and sessions' state are records declared as
msgspec ``Struct`` classes: fields and types, nothing written out.

Every record class of the modules below: it is a Struct, its fields are its annotations
in order, it has no ``__dict__``; ``msgspec.structs.replace``/``asdict``, equality, repr,
pattern matching, copying and pickling behave as they did for the hand-written classes,
frozen ones hash and refuse assignment, and the events' JSON is what it was.
"""

from __future__ import annotations

import copy
import pickle
from typing import Any

import msgspec
import pytest

from harnessc.runtime.agent import hooks as hook_runner
from harnessc.runtime.agent import results, run_state, typed_result
from harnessc.runtime.cli import sessions as cli_sessions
from harnessc.runtime.compaction import (
    branch_summary,
    cut_point,
    file_ops,
    summarize,
    trigger,
)
from harnessc.runtime.core import (
    budget,
    catalog,
    commands,
    events,
    hooks,
    messages,
    model_options,
    options,
)
from harnessc.runtime.core.messages import AssistantMessage, TextContent, ToolCall
from harnessc.runtime.options import harness_options
from harnessc.runtime.permissions import rules, shell_rules
from harnessc.runtime.providers import base as provider_base
from harnessc.runtime.providers import fallback
from harnessc.runtime.resources import types as resource_types
from harnessc.runtime.session import context, entries, replay, repo_protocol
from harnessc.runtime.support import data_folder
from harnessc.runtime.tools import base as tool_base
from harnessc.runtime.tools import paths as tool_paths
from harnessc.runtime.tools import schema, tasks

MODULES = (
    events,
    model_options,
    options,
    hooks,
    budget,
    catalog,
    commands,
    resource_types,
    tool_base,
    rules,
    shell_rules,
    messages,
    provider_base,
    fallback,
    hook_runner,
    results,
    run_state,
    typed_result,
    context,
    entries,
    replay,
    repo_protocol,
    branch_summary,
    cut_point,
    file_ops,
    summarize,
    trigger,
    tool_paths,
    cli_sessions,
    data_folder,
    tasks,
    harness_options,
    schema,
)

RECORDS = sorted(
    (
        value
        for module in MODULES
        for value in vars(module).values()
        if isinstance(value, type)
        and issubclass(value, msgspec.Struct)
        and value.__module__ == module.__name__
    ),
    key=lambda cls: cls.__qualname__,
)


def _required_fields(cls: type[msgspec.Struct]) -> list[str]:
    """The fields without a default (the defaults stand for the last fields)."""
    names, defaults = cls.__struct_fields__, cls.__struct_defaults__
    padded = (msgspec.NODEFAULT,) * (len(names) - len(defaults)) + defaults
    return [
        name for name, default in zip(names, padded, strict=True) if default is msgspec.NODEFAULT
    ]


def _required(cls: type[msgspec.Struct]) -> dict[str, Any]:
    if cls is hooks.HookSpec:
        return {"moment": "tool_call", "handler": print}
    if cls is commands.Command:
        return {"name": "n", "description": "d", "handler": print}
    return {name: f"v-{name}" for name in _required_fields(cls)}


def _instance(cls: type[msgspec.Struct]) -> Any:
    return cls(**_required(cls))


def _comparable(record: msgspec.Struct) -> list[Any]:
    """The field values, a value that compares by identity (an AbortSignal) by its type."""
    values = [getattr(record, name) for name in record.__struct_fields__]
    return [type(v) if type(v).__eq__ is object.__eq__ else v for v in values]


def test_the_records_are_structs() -> None:
    assert events.Event in RECORDS and hooks.HookSpec in RECORDS
    assert set(events.EVENT_TYPES.values()) <= set(RECORDS)
    assert {budget.Budget, catalog.ToolEntry, commands.Command} <= set(RECORDS)
    assert len(RECORDS) >= 120


@pytest.mark.parametrize("cls", RECORDS, ids=lambda cls: cls.__qualname__)
def test_fields_are_the_annotations_in_order(cls: type[msgspec.Struct]) -> None:
    annotations: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        annotations.update(klass.__dict__.get("__annotations__", {}))
    fields = [name for name, kind in annotations.items() if not kind.startswith("ClassVar")]
    assert fields == list(cls.__struct_fields__)
    assert not hasattr(_instance(cls), "__dict__")  # slotted all the way down


@pytest.mark.parametrize("cls", RECORDS, ids=lambda cls: cls.__qualname__)
def test_replace_asdict_copy_and_pickle(cls: type[msgspec.Struct]) -> None:
    record = _instance(cls)
    assert list(msgspec.structs.asdict(record)) == list(cls.__struct_fields__)
    again = msgspec.structs.replace(record)
    assert again == record and again is not record
    assert _comparable(pickle.loads(pickle.dumps(record))) == _comparable(record)
    assert _comparable(copy.deepcopy(record)) == _comparable(record)
    assert _comparable(copy.copy(record)) == _comparable(record)


@pytest.mark.parametrize("cls", RECORDS, ids=lambda cls: cls.__qualname__)
def test_equality_repr_hash_and_match_args(cls: type[msgspec.Struct]) -> None:
    record = _instance(cls)
    other = msgspec.structs.replace(record)
    assert record == other and not (record != other)
    assert record != object() and record.__eq__(object()) is NotImplemented
    names = cls.__struct_fields__
    if cls.__struct_config__.frozen:
        assert hash(record) == hash(other)
        if names:
            with pytest.raises(AttributeError):
                setattr(record, names[0], "changed")
    else:
        with pytest.raises(TypeError):
            hash(record)
        if names:
            changed = copy.copy(record)
            setattr(changed, names[-1], "something else")
            assert changed != record
    shown = ", ".join(f"{n}={getattr(record, n)!r}" for n in names)
    assert repr(record) == f"{cls.__qualname__}({shown})"
    # positional fields match by position (the events take keywords only: none)
    if cls.__match_args__:
        assert cls(*[getattr(record, n) for n in cls.__match_args__]) == record


def test_per_instance_defaults_are_fresh() -> None:
    first, second = events.AgentStartEvent(), events.AgentStartEvent()
    first.active_tools.append("read")
    assert second.active_tools == []
    assert hooks.StopDecision().messages is not hooks.StopDecision().messages
    assert run_state.RunState("r").machine is not run_state.RunState("r").machine
    assert events.TurnStartEvent().timestamp > 0
    assert events.TurnStartEvent(timestamp=5.0).timestamp == 5.0
    # the free reply's cost is shared (a cost is replaced, never changed: it is frozen)
    assert messages.Usage().cost is messages.NO_COST


def test_events_take_keywords_only() -> None:
    with pytest.raises(TypeError):
        events.TurnStartEvent(1)  # type: ignore[misc]


def test_events_match_and_turn_into_json_as_before() -> None:
    call = ToolCall(id="c1", name="read", arguments={"path": "a"})
    reply = AssistantMessage(content=[TextContent(text="hi")])
    event = events.TurnEndEvent(seq=4, timestamp=2.0, turn=1, message=reply)
    match event:
        case events.TurnEndEvent(turn=1, message=AssistantMessage()):
            pass
        case _:
            pytest.fail("a keyword pattern did not match")
    match hooks.ToolCallEvent("c1", "read", {"path": "a"}):
        case hooks.ToolCallEvent(_, "read", args):
            assert args == {"path": "a"}
        case _:
            pytest.fail("a positional pattern did not match")
    assert event.to_dict() == {
        "type": "turn_end",
        "seq": 4,
        "timestamp": 2.0,
        "turn": 1,
        "message": reply.to_dict(),
        "tool_results": [],
    }
    plan = events.PlanCommitEvent(seq=1, timestamp=1.0, tool_calls=[call])
    assert plan.to_dict()["tool_calls"] == [call.to_dict()]
    assert "output" not in events.AgentEndEvent().to_dict()
    assert events.to_jsonable(hooks.ToolCallResult(block=True)) == {
        "block": True,
        "reason": None,
        "input": None,
    }


def test_hook_spec_checks_its_moment_and_matcher() -> None:
    spec = hooks.HookSpec("tool_call", print, matcher="write|edit")
    assert spec.matches_tool("edit") and not spec.matches_tool("read")
    assert not spec.matches_tool("write_more")  # the whole name
    assert msgspec.structs.replace(spec, matcher="read").matches_tool("read")
    with pytest.raises(hooks.UnknownHookError):
        hooks.HookSpec("tool_cal", print)
    with pytest.raises(hooks.UnknownHookError):
        msgspec.structs.replace(spec, moment="tool_cal")
    with pytest.raises(Exception, match="unterminated|missing"):
        hooks.HookSpec("tool_call", print, matcher="(write")


def test_hook_results_are_still_checked_field_by_field() -> None:
    assert hooks.hook_result_problem("tool_call", hooks.ToolCallResult(block=True)) is None
    assert "block" in (hooks.hook_result_problem("tool_call", {"block": "yes"}) or "")
    assert "unknown keys" in (hooks.hook_result_problem("tool_call", {"blocked": True}) or "")
    assert hooks.hook_result_problem("before_stop", {"continue": True}) is None
    assert hooks.hook_result_problem("on_budget_exceeded", {"turns": 3}) is None


def test_budgets_still_check_their_limits_and_catalog_entries_stay_frozen() -> None:
    with pytest.raises(ValueError, match="must not be negative"):
        budget.Budget(turns=-1)
    with pytest.raises(ValueError, match="soft_ratio"):
        msgspec.structs.replace(budget.Budget(), soft_ratio=2)
    tracker = budget.BudgetTracker(budget=budget.Budget(turns=2))
    tracker.usage.turns = 2
    assert [w.level for w in tracker.check(("turns",))] == ["hard"]
    assert budget.BudgetTracker().usage is not budget.BudgetTracker().usage
    entry = catalog.TOOLS[0]
    assert {entry: 1}[msgspec.structs.replace(entry)] == 1
    with pytest.raises(AttributeError):
        del entry.name
