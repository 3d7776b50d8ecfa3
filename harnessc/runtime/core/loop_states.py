"""The loop contract: six states and the one function that moves between them."""

from __future__ import annotations

from collections.abc import Callable
from enum import StrEnum

__all__ = [
    "TRANSITIONS",
    "IllegalTransitionError",
    "LoopState",
    "StateMachine",
    "check_transition",
]


class LoopState(StrEnum):
    IDLE = "IDLE"
    PLANNING = "PLANNING"
    EXECUTING = "EXECUTING"
    AWAITING_TOOL = "AWAITING_TOOL"
    REFLECTING = "REFLECTING"
    DONE = "DONE"


TRANSITIONS: dict[LoopState, frozenset[LoopState]] = {
    LoopState.IDLE: frozenset({LoopState.PLANNING}),
    LoopState.PLANNING: frozenset({LoopState.EXECUTING, LoopState.IDLE, LoopState.DONE}),
    LoopState.EXECUTING: frozenset({LoopState.AWAITING_TOOL, LoopState.REFLECTING, LoopState.IDLE}),
    LoopState.AWAITING_TOOL: frozenset({LoopState.REFLECTING, LoopState.IDLE}),
    LoopState.REFLECTING: frozenset(
        {LoopState.PLANNING, LoopState.EXECUTING, LoopState.DONE, LoopState.IDLE}
    ),
    LoopState.DONE: frozenset(),
}


class IllegalTransitionError(RuntimeError):
    pass


def check_transition(source: LoopState, target: LoopState) -> None:
    """Raise IllegalTransitionError for a move the contract forbids."""
    if target not in TRANSITIONS[source]:
        allowed = ", ".join(s.value for s in sorted(TRANSITIONS[source], key=lambda s: s.value))
        raise IllegalTransitionError(
            f"illegal transition {source.value} -> {target.value}"
            f" (allowed from {source.value}: {allowed or 'nothing'})"
        )


class StateMachine:
    """One run's state. IDLE is the only entry, DONE the only exit.

    ``transition`` is the one place a state changes; ``on_change`` (when set) hears
    every move after it is made.
    """

    __slots__ = ("_state", "on_change")

    def __init__(
        self,
        on_change: Callable[[LoopState, LoopState], None] | None = None,
        state: LoopState = LoopState.IDLE,
    ) -> None:
        self._state = state
        self.on_change = on_change

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, StateMachine):
            return NotImplemented
        return self._state is other._state

    __hash__ = None  # type: ignore[assignment]  # mutable: equal while in the same state

    def __repr__(self) -> str:
        return f"StateMachine({self._state.value})"

    @property
    def state(self) -> LoopState:
        return self._state

    def transition(self, target: LoopState) -> None:
        """Move to ``target``; raises IllegalTransitionError for a move the contract
        forbids (the table has no self-moves, so staying put is not a transition)."""
        source = self._state
        check_transition(source, target)
        self._state = target
        if self.on_change is not None:
            self.on_change(source, target)
