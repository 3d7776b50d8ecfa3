"""Tools: the built-ins (read, bash, edit, write, ls, grep, find, todo, finish) and
Python-callable / external tools."""

from harnessc.runtime.tools.base import (
    AgentTool,
    ExecutionMode,
    ExternalTool,
    Tool,
    ToolExecute,
    ToolResult,
    ToolUpdate,
    error_result,
    text_result,
)
from harnessc.runtime.tools.bash import create_bash_tool
from harnessc.runtime.tools.edit import create_edit_tool
from harnessc.runtime.tools.ls import create_ls_tool
from harnessc.runtime.tools.paths import PathError, resolve_path
from harnessc.runtime.tools.pyfunc import import_object, python_tool
from harnessc.runtime.tools.read import create_read_tool
from harnessc.runtime.tools.schema import ToolContext, schema_for_function, schema_for_type
from harnessc.runtime.tools.search import create_find_tool, create_grep_tool
from harnessc.runtime.tools.tasks import (
    ALL_DONE_MESSAGE,
    FinishRecord,
    TaskState,
    TaskTool,
    TodoItem,
    create_finish_tool,
    create_task_tools,
    create_todo_tool,
)
from harnessc.runtime.tools.truncate import MAX_BYTES, MAX_LINES
from harnessc.runtime.tools.write import create_write_tool

__all__ = [
    "ALL_DONE_MESSAGE",
    "AgentTool",
    "ExecutionMode",
    "ExternalTool",
    "FinishRecord",
    "MAX_BYTES",
    "MAX_LINES",
    "PathError",
    "TaskState",
    "TaskTool",
    "TodoItem",
    "Tool",
    "ToolContext",
    "ToolExecute",
    "ToolResult",
    "ToolUpdate",
    "builtin_tools",
    "create_bash_tool",
    "create_edit_tool",
    "create_find_tool",
    "create_finish_tool",
    "create_grep_tool",
    "create_ls_tool",
    "create_read_tool",
    "create_task_tools",
    "create_todo_tool",
    "create_write_tool",
    "error_result",
    "import_object",
    "python_tool",
    "resolve_path",
    "schema_for_function",
    "schema_for_type",
    "text_result",
]


def builtin_tools(*, bash_timeout_s: float | None = None) -> list[Tool]:
    """Every built-in tool, todo and finish sharing one task state."""
    todo, finish = create_task_tools()
    return [
        create_read_tool(),
        create_bash_tool(bash_timeout_s),
        create_edit_tool(),
        create_write_tool(),
        create_ls_tool(),
        create_grep_tool(),
        create_find_tool(),
        todo,
        finish,
    ]
