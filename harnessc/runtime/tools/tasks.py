"""The ``todo`` and ``finish`` tools and their state.

Both tools share a ``TaskState``. Every result's ``details`` holds the full state
(``{"todos": [...], "finish": {...} | None, "counts": {...}}``), so the session records it
and ``TaskState.from_messages`` rebuilds it from history.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

import msgspec

from harnessc.runtime.core.signal import AbortSignal
from harnessc.runtime.tools.base import (
    Tool,
    ToolResult,
    ToolUpdate,
    error_result,
    text_result,
)
from harnessc.runtime.tools.truncate import MAX_BYTES, MAX_LINES, truncate_head

__all__ = [
    "ALL_DONE_MESSAGE",
    "FINISH_STATUSES",
    "FinishRecord",
    "TODO_STATUSES",
    "TaskState",
    "TaskTool",
    "TodoItem",
    "create_finish_tool",
    "create_task_tools",
    "create_todo_tool",
]

TodoStatus = Literal["pending", "in_progress", "done"]
FinishStatus = Literal["completed", "blocked"]
TODO_STATUSES: tuple[str, ...] = ("pending", "in_progress", "done")
FINISH_STATUSES: tuple[str, ...] = ("completed", "blocked")
ALL_DONE_MESSAGE = "All tasks are done. Call finish to end the run."


@dataclass(slots=True)
class TodoItem:
    id: str
    title: str
    status: str = "pending"

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "title": self.title, "status": self.status}


@dataclass(slots=True)
class FinishRecord:
    status: str
    summary: str

    def to_dict(self) -> dict[str, Any]:
        return {"status": self.status, "summary": self.summary}


@dataclass(slots=True)
class TaskState:
    """The todo list and the finish record of one run."""

    todos: list[TodoItem] = field(default_factory=list)
    finish: FinishRecord | None = None

    def counts(self) -> dict[str, int]:
        out = {status: 0 for status in TODO_STATUSES}
        for item in self.todos:
            out[item.status] = out.get(item.status, 0) + 1
        out["total"] = len(self.todos)
        return out

    @property
    def pending(self) -> list[TodoItem]:
        """Todos not done yet (pending or in progress)."""
        return [t for t in self.todos if t.status != "done"]

    @property
    def all_done(self) -> bool:
        return bool(self.todos) and not self.pending

    def to_dict(self) -> dict[str, Any]:
        return {
            "todos": [t.to_dict() for t in self.todos],
            "finish": self.finish.to_dict() if self.finish else None,
            "counts": self.counts(),
        }

    def replace_with(self, other: TaskState) -> None:
        """Take over ``other``'s todos and finish (e.g. after reopening a session)."""
        self.todos = [TodoItem(t.id, t.title, t.status) for t in other.todos]
        self.finish = (
            FinishRecord(other.finish.status, other.finish.summary) if other.finish else None
        )

    @staticmethod
    def _todos_from(raw: Any) -> list[TodoItem] | None:
        if not isinstance(raw, list):
            return None
        items: list[TodoItem] = []
        for entry in raw:
            if isinstance(entry, dict) and "title" in entry:
                status = str(entry.get("status", "pending"))
                items.append(
                    TodoItem(str(entry.get("id", len(items) + 1)), str(entry["title"]), status)
                )
        return items

    @staticmethod
    def _finish_from(raw: Any) -> FinishRecord | None:
        if isinstance(raw, dict) and "status" in raw:
            return FinishRecord(str(raw["status"]), str(raw.get("summary", "")))
        return None

    @classmethod
    def from_dict(cls, data: Any) -> TaskState:
        state = cls()
        if isinstance(data, dict):
            state.todos = cls._todos_from(data.get("todos")) or []
            state.finish = cls._finish_from(data.get("finish"))
        return state

    @classmethod
    def from_messages(cls, messages: Iterable[Any]) -> TaskState:
        """Rebuild the state from recorded tool results (objects or their JSON dicts).

        The latest successful ``todo`` result gives the todos, the latest ``finish``
        result the finish record (so it also works when the tools did not share a state).
        """
        state = cls()
        for message in messages:
            if isinstance(message, dict):
                if message.get("role") != "toolResult":
                    continue
                name, details = message.get("toolName"), message.get("details")
                failed = bool(message.get("isError"))
            else:
                if getattr(message, "role", None) != "toolResult":
                    continue
                name, details = (
                    getattr(message, "tool_name", None),
                    getattr(message, "details", None),
                )
                failed = bool(getattr(message, "is_error", False))
            if failed or not isinstance(details, dict) or name not in ("todo", "finish"):
                continue
            if name == "todo":
                todos = cls._todos_from(details.get("todos"))
                if todos is not None:
                    state.todos = todos
                if "finish" in details and state.finish is None:
                    state.finish = cls._finish_from(details.get("finish"))
            else:
                record = cls._finish_from(details.get("finish"))
                if record is not None:
                    state.finish = record
                todos = cls._todos_from(details.get("todos"))
                if todos:
                    state.todos = todos
        return state


class TaskTool(Tool):
    """A ``Tool`` that also exposes the ``TaskState`` it works on."""

    state: TaskState = msgspec.field(default_factory=TaskState)


def _render(state: TaskState) -> str:
    if not state.todos:
        return "No tasks."
    listing = "\n".join(f"- [{t.status}] {t.title} (id: {t.id})" for t in state.todos)
    # Capped like every tool output (2000 lines / 50 KB), room left for the counts.
    cut = truncate_head(listing, MAX_LINES - 10, MAX_BYTES - 1024)
    if cut.truncated:
        listing = (
            f"{cut.content}\n[List truncated at 2000 lines / 50 KB: showing {cut.output_lines} "
            f"of {cut.total_lines} lines. Complete tasks or set a shorter list to see the rest.]"
        )
    c = state.counts()
    lines = [
        listing,
        "",
        f"{c['total']} tasks: {c['done']} done, {c['in_progress']} in progress, "
        f"{c['pending']} pending.",
    ]
    if state.all_done:
        lines.append(ALL_DONE_MESSAGE)
    return "\n".join(lines)


def _set(state: TaskState, raw_items: Any) -> str | None:
    if not isinstance(raw_items, list):
        return "op=set needs items: a list of {title, id?, status?}"
    items: list[TodoItem] = []
    seen: dict[str, int] = {}
    for position, raw in enumerate(raw_items, start=1):
        if isinstance(raw, str):
            raw = {"title": raw}
        if not isinstance(raw, dict):
            return f"item {position} must be an object with a title"
        title = raw.get("title")
        if not isinstance(title, str) or not title.strip():
            return f"item {position} needs a non-empty title"
        raw_id = raw.get("id")
        item_id = str(position) if raw_id is None or raw_id == "" else str(raw_id)
        if item_id in seen:
            return f"duplicate id {item_id!r} (items {seen[item_id]} and {position})"
        seen[item_id] = position
        status = raw.get("status", "pending") or "pending"
        if status not in TODO_STATUSES:
            return f"item {position} has unknown status {status!r}; use one of {', '.join(TODO_STATUSES)}"
        items.append(TodoItem(item_id, title.strip(), str(status)))
    state.todos = items
    return None


def _complete(state: TaskState, raw_ids: Any) -> str | None:
    if isinstance(raw_ids, str | int):
        raw_ids = [raw_ids]
    if not isinstance(raw_ids, list) or not raw_ids:
        return "op=complete needs ids: a list of task ids"
    ids = [str(i) for i in raw_ids]
    known = {t.id: t for t in state.todos}
    unknown = [i for i in ids if i not in known]
    if unknown:
        have = ", ".join(known) or "none"
        return f"unknown task id(s): {', '.join(unknown)} (known ids: {have})"
    for i in ids:
        known[i].status = "done"
    return None


_TODO_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "op": {
            "type": "string",
            "enum": ["list", "set", "complete"],
            "description": "list: show tasks; set: replace the whole list; complete: mark ids done.",
        },
        "items": {
            "type": "array",
            "description": "For op=set: the complete new list.",
            "items": {
                "type": "object",
                "properties": {
                    "id": {
                        "type": "string",
                        "description": "Defaults to the position (1, 2, ...).",
                    },
                    "title": {"type": "string"},
                    "status": {"type": "string", "enum": list(TODO_STATUSES)},
                },
                "required": ["title"],
            },
        },
        "ids": {
            "type": "array",
            "items": {"type": "string"},
            "description": "For op=complete: the ids to mark done.",
        },
    },
    "required": ["op"],
    "additionalProperties": False,
}

_FINISH_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "status": {
            "type": "string",
            "enum": list(FINISH_STATUSES),
            "description": "completed when the task is done, blocked when you cannot go on.",
        },
        "summary": {"type": "string", "description": "What was done, or what blocks you."},
    },
    "required": ["status", "summary"],
    "additionalProperties": False,
}

# Factories called without a state pair up: a todo tool and the next finish tool made
# without one share a state (and vice versa), so ``[create_todo_tool(), create_finish_tool()]``
# works as expected.
_unpaired: dict[str, TaskState] = {}
_pair_lock = threading.Lock()


def _state_for(kind: str, state: TaskState | None) -> TaskState:
    if state is not None:
        return state
    other = "finish" if kind == "todo" else "todo"
    with _pair_lock:
        found = _unpaired.pop(other, None)
        if found is not None:
            return found
        fresh = TaskState()
        _unpaired[kind] = fresh
        return fresh


def create_todo_tool(state: TaskState | None = None) -> TaskTool:
    """The ``todo`` tool working on ``state`` (see the module note on pairing)."""
    shared = _state_for("todo", state)
    lock = threading.Lock()

    async def run(
        tool_call_id: str,
        params: dict[str, Any],
        signal: AbortSignal,
        on_update: ToolUpdate,
        context: Any,
    ) -> ToolResult:
        op = params.get("op", "list")
        with lock:
            if op == "list":
                problem = None
            elif op == "set":
                problem = _set(shared, params.get("items"))
            elif op == "complete":
                problem = _complete(shared, params.get("ids"))
            else:
                problem = f"unknown op {op!r}; use list, set or complete"
            details = shared.to_dict()
            if problem:
                return error_result(f"todo {op}: {problem}. The list was not changed.", details)
            return text_result(_render(shared), details)

    return TaskTool(
        name="todo",
        label="Todo",
        description=(
            "Track the tasks of this run. op=set replaces the whole list (items with title, "
            "optional id and status pending|in_progress|done), op=complete marks ids done, "
            "op=list shows the list."
        ),
        parameters=_TODO_PARAMETERS,
        run=run,
        state=shared,
    )


def create_finish_tool(state: TaskState | None = None, *, terminate: bool = False) -> TaskTool:
    """The ``finish`` tool; ``terminate`` ends the loop right after the batch."""
    shared = _state_for("finish", state)

    async def run(
        tool_call_id: str,
        params: dict[str, Any],
        signal: AbortSignal,
        on_update: ToolUpdate,
        context: Any,
    ) -> ToolResult:
        status = params.get("status")
        summary = params.get("summary")
        if status not in FINISH_STATUSES:
            return error_result(
                f"finish: status must be completed or blocked (got {status!r})", shared.to_dict()
            )
        if not isinstance(summary, str) or not summary.strip():
            return error_result("finish: a non-empty summary is required", shared.to_dict())
        shared.finish = FinishRecord(str(status), summary.strip())
        result = text_result(f"Finish recorded ({status}): {summary.strip()}", shared.to_dict())
        result.terminate = terminate
        return result

    return TaskTool(
        name="finish",
        label="Finish",
        description=(
            "End the run: status completed when all work is done, blocked when you cannot "
            "go on; summary says what was done or what blocks you."
        ),
        parameters=_FINISH_PARAMETERS,
        run=run,
        state=shared,
    )


def create_task_tools(state: TaskState | None = None) -> tuple[TaskTool, TaskTool]:
    """A ``todo`` and a ``finish`` tool sharing one state."""
    shared = state or TaskState()
    return create_todo_tool(shared), create_finish_tool(shared)
