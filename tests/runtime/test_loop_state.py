"""The seed-004 state machine: every legal move and the rejection of illegal ones."""

from __future__ import annotations

import itertools

import pytest

from harnessc.runtime.core.loop_states import (
    TRANSITIONS,
    IllegalTransitionError,
    LoopState,
    StateMachine,
)

LEGAL = {
    (LoopState.IDLE, LoopState.PLANNING),
    (LoopState.PLANNING, LoopState.EXECUTING),
    (LoopState.PLANNING, LoopState.IDLE),
    (LoopState.PLANNING, LoopState.DONE),
    (LoopState.EXECUTING, LoopState.AWAITING_TOOL),
    (LoopState.EXECUTING, LoopState.REFLECTING),
    (LoopState.EXECUTING, LoopState.IDLE),
    (LoopState.AWAITING_TOOL, LoopState.REFLECTING),
    (LoopState.AWAITING_TOOL, LoopState.IDLE),
    (LoopState.REFLECTING, LoopState.PLANNING),
    (LoopState.REFLECTING, LoopState.EXECUTING),
    (LoopState.REFLECTING, LoopState.DONE),
    (LoopState.REFLECTING, LoopState.IDLE),
}


def test_table_matches_the_contract() -> None:
    table = {(s, t) for s, targets in TRANSITIONS.items() for t in targets}
    assert table == LEGAL


@pytest.mark.parametrize("source,target", sorted(LEGAL, key=lambda p: (p[0].value, p[1].value)))
def test_every_legal_transition(source: LoopState, target: LoopState) -> None:
    seen: list[tuple[LoopState, LoopState]] = []
    machine = StateMachine(lambda a, b: seen.append((a, b)), state=source)
    machine.transition(target)
    assert machine.state is target
    assert seen == [(source, target)]


ILLEGAL = sorted(
    (set(itertools.product(LoopState, LoopState)) - LEGAL), key=lambda p: (p[0].value, p[1].value)
)


@pytest.mark.parametrize("source,target", ILLEGAL)
def test_every_illegal_transition_is_rejected(source: LoopState, target: LoopState) -> None:
    machine = StateMachine(state=source)
    with pytest.raises(IllegalTransitionError, match=f"{source.value} -> {target.value}"):
        machine.transition(target)
    assert machine.state is source


def test_done_is_final() -> None:
    machine = StateMachine(state=LoopState.DONE)
    with pytest.raises(IllegalTransitionError, match="allowed from DONE: nothing"):
        machine.transition(LoopState.IDLE)


def test_a_listener_attached_later_hears_every_move() -> None:
    """A run restored from its record gets its listener when the loop takes it up."""
    machine = StateMachine(state=LoopState.AWAITING_TOOL)
    seen: list[tuple[LoopState, LoopState]] = []
    machine.on_change = lambda a, b: seen.append((a, b))
    machine.transition(LoopState.REFLECTING)
    machine.transition(LoopState.DONE)
    assert seen == [
        (LoopState.AWAITING_TOOL, LoopState.REFLECTING),
        (LoopState.REFLECTING, LoopState.DONE),
    ]
