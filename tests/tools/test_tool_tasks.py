from __future__ import annotations

from harnessc.runtime.core.messages import TextContent, ToolResultMessage, message_from_dict
from harnessc.runtime.tools import (
    ALL_DONE_MESSAGE,
    TaskState,
    create_finish_tool,
    create_task_tools,
    create_todo_tool,
)
from harnessc.runtime.tools import tasks as tasks_module


def test_todo_set_list_complete(run_tool, txt):
    todo, _ = create_task_tools()
    result = run_tool(
        todo,
        {
            "op": "set",
            "items": [{"title": "write code"}, {"title": "test", "status": "in_progress"}],
        },
    )
    assert not result.is_error
    assert txt(result).splitlines()[:2] == [
        "- [pending] write code (id: 1)",
        "- [in_progress] test (id: 2)",
    ]
    assert result.details["counts"] == {"pending": 1, "in_progress": 1, "done": 0, "total": 2}
    assert result.details["todos"][0] == {"id": "1", "title": "write code", "status": "pending"}
    assert result.details["finish"] is None
    listed = run_tool(todo, {"op": "list"})
    assert txt(listed) == txt(result)
    done = run_tool(todo, {"op": "complete", "ids": ["1", "2"]})
    assert ALL_DONE_MESSAGE in txt(done)
    assert todo.state.all_done


def test_todo_set_replaces_and_custom_ids(run_tool, txt):
    todo = create_todo_tool(TaskState())
    run_tool(todo, {"op": "set", "items": [{"title": "a"}, {"title": "b"}, {"title": "c"}]})
    run_tool(todo, {"op": "set", "items": [{"id": "x", "title": "only"}]})
    assert [t.id for t in todo.state.todos] == ["x"]
    assert ALL_DONE_MESSAGE not in txt(run_tool(todo, {"op": "list"}))


def test_todo_errors_leave_state_unchanged(run_tool, txt):
    todo = create_todo_tool(TaskState())
    run_tool(todo, {"op": "set", "items": [{"id": "a", "title": "one"}]})
    dup = run_tool(
        todo, {"op": "set", "items": [{"id": "k", "title": "x"}, {"id": "k", "title": "y"}]}
    )
    assert dup.is_error and "duplicate id 'k'" in txt(dup)
    untitled = run_tool(todo, {"op": "set", "items": [{"title": "  "}]})
    assert untitled.is_error and "title" in txt(untitled)
    status = run_tool(todo, {"op": "set", "items": [{"title": "x", "status": "later"}]})
    assert status.is_error and "unknown status" in txt(status)
    unknown = run_tool(todo, {"op": "complete", "ids": ["a", "zz"]})
    assert unknown.is_error and "zz" in txt(unknown)
    assert todo.state.todos[0].status == "pending" and len(todo.state.todos) == 1
    assert run_tool(todo, {"op": "explode"}).is_error
    assert unknown.details["todos"][0]["id"] == "a"


def test_finish_records_and_validates(run_tool, txt):
    todo, finish = create_task_tools()
    run_tool(todo, {"op": "set", "items": [{"title": "t"}]})
    assert run_tool(finish, {"status": "maybe", "summary": "x"}).is_error
    assert run_tool(finish, {"status": "completed", "summary": " "}).is_error
    result = run_tool(finish, {"status": "blocked", "summary": "no network"})
    assert not result.is_error and not result.terminate
    assert result.details["finish"] == {"status": "blocked", "summary": "no network"}
    assert result.details["todos"][0]["title"] == "t"  # full state
    assert todo.state.finish is not None and todo.state.finish.status == "blocked"
    assert create_finish_tool(TaskState(), terminate=True).name == "finish"


def test_factories_without_state_pair_up(run_tool):
    tasks_module._unpaired.clear()
    todo = create_todo_tool()
    finish = create_finish_tool()
    assert todo.state is finish.state
    todo2, finish2 = create_todo_tool(), create_finish_tool()
    assert todo2.state is finish2.state and todo2.state is not todo.state


def test_state_from_messages(run_tool):
    todo, finish = create_todo_tool(TaskState()), create_finish_tool(TaskState())
    messages = []
    for tool, params in [
        (todo, {"op": "set", "items": [{"title": "a"}, {"title": "b"}]}),
        (todo, {"op": "complete", "ids": ["1"]}),
        (todo, {"op": "complete", "ids": ["9"]}),  # error: ignored
        (finish, {"status": "completed", "summary": "done"}),
    ]:
        result = run_tool(tool, params)
        messages.append(
            ToolResultMessage(
                "id", tool.name, result.content, details=result.details, is_error=result.is_error
            )
        )
    state = TaskState.from_messages(messages)
    assert [(t.id, t.status) for t in state.todos] == [("1", "done"), ("2", "pending")]
    assert state.finish is not None and state.finish.summary == "done"
    as_dicts = [m.to_dict() for m in messages]
    assert TaskState.from_messages(as_dicts) == state
    assert TaskState.from_messages([message_from_dict(d) for d in as_dicts]) == state
    assert TaskState.from_dict(state.to_dict()) == state
    other = TaskState()
    other.replace_with(state)
    assert other == state
    assert (
        TaskState.from_messages([ToolResultMessage("i", "bash", [TextContent("x")])]) == TaskState()
    )


def test_todo_output_is_capped_and_keeps_the_counts(run_tool, txt):
    todo = create_todo_tool(TaskState())
    items = [{"title": "x" * 100} for _ in range(3000)]
    text = txt(run_tool(todo, {"op": "set", "items": items}))
    assert len(text.encode()) <= 50 * 1024 and len(text.splitlines()) <= 2000
    assert "[List truncated at 2000 lines / 50 KB" in text
    assert text.endswith("3000 tasks: 0 done, 0 in progress, 3000 pending.")
    assert len(todo.state.todos) == 3000  # only the text is capped
