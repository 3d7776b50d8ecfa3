"""Events, hook types, options, budgets, catalog entries, resources, tool results,
messages, provider requests and the loop's and sessions' state are slotted records that
behave as the dataclasses they replace.

Every record class of the modules below: its fields (the ``__init__`` parameters), slots
and annotations agree; ``dataclasses.fields``/``asdict``/``replace``, equality, repr,
pattern matching, pickling and the events' JSON work as they do for a dataclass.
"""

from __future__ import annotations

import copy
import dataclasses
import inspect
import pickle
from typing import Any

import pytest

from harnessc.runtime.agent import driver, results, run_state, typed_result
from harnessc.runtime.agent import hooks as hook_runner
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
from harnessc.runtime.permissions import rules as permissions
from harnessc.runtime.permissions import shell_rules
from harnessc.runtime.providers import base as provider_base
from harnessc.runtime.providers import fallback
from harnessc.runtime.resources import types as resource_types
from harnessc.runtime.session import context, entries, replay, repo_protocol
from harnessc.runtime.support import data_folder
from harnessc.runtime.support.records import NEW_LIST, Record
from harnessc.runtime.tools import base as tool_base
from harnessc.runtime.tools import paths as tool_paths
from harnessc.runtime.tools import tasks

RECORDS = sorted(
    (
        value
        for module in (
            events,
            model_options,
            options,
            harness_options,
            hooks,
            budget,
            catalog,
            commands,
            resource_types,
            tool_base,
            permissions,
            shell_rules,
            messages,
            provider_base,
            fallback,
            driver,
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
        )
        for value in vars(module).values()
        if isinstance(value, type)
        and issubclass(value, Record)
        and value.__module__ == module.__name__
    ),
    key=lambda cls: cls.__qualname__,
)


def _required(cls: type[Record]) -> dict[str, Any]:
    if cls is hooks.HookSpec:
        return {"moment": "tool_call", "handler": print}
    if cls is commands.Command:
        return {"name": "n", "description": "d", "handler": print}
    parameters = inspect.signature(cls).parameters.values()
    return {p.name: f"v-{p.name}" for p in parameters if p.default is inspect.Parameter.empty}


def _instance(cls: type[Record]) -> Any:
    return cls(**_required(cls))


def _comparable(record: Record) -> list[Any]:
    """The field values, a value that compares by identity (an AbortSignal) by its type."""
    values = [getattr(record, name) for name in record._field_names]
    return [type(v) if type(v).__eq__ is object.__eq__ else v for v in values]


def test_the_event_and_hook_types_are_all_records() -> None:
    assert events.Event in RECORDS and hooks.HookSpec in RECORDS
    assert set(events.EVENT_TYPES.values()) <= set(RECORDS)
    assert {budget.Budget, catalog.ToolEntry, commands.Command} <= set(RECORDS)
    assert len(RECORDS) >= 60


@pytest.mark.parametrize("cls", RECORDS, ids=lambda cls: cls.__qualname__)
def test_fields_slots_and_annotations_agree(cls: type[Record]) -> None:
    slots: list[str] = []
    annotations: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        slots.extend(klass.__dict__.get("__slots__", ()))
        annotations.update(klass.__dict__.get("__annotations__", {}))
    fields = [name for name, kind in annotations.items() if not kind.startswith("ClassVar")]
    # A slot that is no field is private state the __init__ derives (HookSpec's regex).
    derived = [name for name in slots if name not in cls._field_names]
    assert all(name.startswith("_") for name in derived)
    assert [name for name in slots if name not in derived] == list(cls._field_names)
    assert [name for name in fields if name not in derived] == list(cls._field_names)
    assert not hasattr(_instance(cls), "__dict__")  # slotted all the way down


@pytest.mark.parametrize("cls", RECORDS, ids=lambda cls: cls.__qualname__)
def test_a_record_answers_the_dataclasses_functions(cls: type[Record]) -> None:
    record = _instance(cls)
    assert dataclasses.is_dataclass(cls) and dataclasses.is_dataclass(record)
    fields = dataclasses.fields(record)
    assert tuple(f.name for f in fields) == cls._field_names
    parameters = inspect.signature(cls).parameters
    for f in fields:
        assert f.kw_only == (parameters[f.name].kind is inspect.Parameter.KEYWORD_ONLY)
        if f.default_factory is not dataclasses.MISSING:
            made = f.default_factory()
            assert type(getattr(record, f.name)) is type(made)
            # a timestamp is the time of making; an AbortSignal compares by identity
            if f.name != "timestamp" and type(made).__eq__ is not object.__eq__:
                assert getattr(record, f.name) == made
    assert list(dataclasses.asdict(record)) == list(cls._field_names)
    again = dataclasses.replace(record)
    assert again == record and again is not record
    assert _comparable(pickle.loads(pickle.dumps(record))) == _comparable(record)
    assert _comparable(copy.deepcopy(record)) == _comparable(record)


@pytest.mark.parametrize("cls", RECORDS, ids=lambda cls: cls.__qualname__)
def test_equality_repr_hash_and_match_args_are_the_dataclass_ones(cls: type[Record]) -> None:
    record = _instance(cls)
    other = dataclasses.replace(record)
    assert record == other and not (record != other)
    if cls._field_names:
        name = cls._field_names[-1]
        changed = copy.copy(record)
        object.__setattr__(changed, name, "something else")
        assert changed != record
    assert record != object() and record.__eq__(object()) is NotImplemented
    if cls._frozen:
        assert hash(record) == hash(other)
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(record, (*cls._field_names, "anything")[0], "changed")
    else:
        with pytest.raises(TypeError):
            hash(record)
    shown = ", ".join(f"{n}={getattr(record, n)!r}" for n in cls._field_names)
    assert repr(record) == f"{cls.__qualname__}({shown})"
    positional = [
        p.name
        for p in inspect.signature(cls).parameters.values()
        if p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
    ]
    assert list(cls.__match_args__) == positional


def test_per_instance_defaults_are_fresh() -> None:
    first, second = events.AgentStartEvent(), events.AgentStartEvent()
    first.active_tools.append("read")
    assert second.active_tools == []
    assert hooks.StopDecision().messages is not hooks.StopDecision().messages
    assert events.TurnStartEvent().timestamp > 0
    assert events.TurnStartEvent(timestamp=5.0).timestamp == 5.0
    assert repr(NEW_LIST) == "<new list>"


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


def test_hook_spec_compiles_its_matcher_and_checks_its_moment() -> None:
    spec = hooks.HookSpec("tool_call", print, matcher="write|edit")
    assert spec.matches_tool("edit") and not spec.matches_tool("read")
    assert dataclasses.replace(spec, matcher="read").matches_tool("read")
    with pytest.raises(hooks.UnknownHookError):
        hooks.HookSpec("tool_cal", print)


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
        dataclasses.replace(budget.Budget(), soft_ratio=2)
    tracker = budget.BudgetTracker(budget=budget.Budget(turns=2))
    tracker.usage.turns = 2
    assert [w.level for w in tracker.check(("turns",))] == ["hard"]
    assert budget.BudgetTracker().usage is not budget.BudgetTracker().usage
    entry = catalog.TOOLS[0]
    assert {entry: 1}[dataclasses.replace(entry)] == 1
    with pytest.raises(dataclasses.FrozenInstanceError):
        del entry.name
