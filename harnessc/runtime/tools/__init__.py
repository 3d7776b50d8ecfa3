"""Tools: the built-ins (read, bash, edit, write, ls, grep, find, todo, finish) and
Python-callable / external tools.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harnessc.runtime.support.lazy import lazy_exports

if TYPE_CHECKING:
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
    from harnessc.runtime.tools.schema import (
        ToolContext,
        schema_for_function,
        schema_for_type,
    )
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

# Public name -> the module defining it; imported on first use so that importing
# this package stays cheap for a one-shot agent run.
_EXPORTS: dict[str, str] = {
    "AgentTool": "harnessc.runtime.tools.base",
    "ExecutionMode": "harnessc.runtime.tools.base",
    "ExternalTool": "harnessc.runtime.tools.base",
    "Tool": "harnessc.runtime.tools.base",
    "ToolExecute": "harnessc.runtime.tools.base",
    "ToolResult": "harnessc.runtime.tools.base",
    "ToolUpdate": "harnessc.runtime.tools.base",
    "error_result": "harnessc.runtime.tools.base",
    "text_result": "harnessc.runtime.tools.base",
    "create_bash_tool": "harnessc.runtime.tools.bash",
    "create_edit_tool": "harnessc.runtime.tools.edit",
    "create_ls_tool": "harnessc.runtime.tools.ls",
    "PathError": "harnessc.runtime.tools.paths",
    "resolve_path": "harnessc.runtime.tools.paths",
    "import_object": "harnessc.runtime.tools.pyfunc",
    "python_tool": "harnessc.runtime.tools.pyfunc",
    "create_read_tool": "harnessc.runtime.tools.read",
    "ToolContext": "harnessc.runtime.tools.schema",
    "schema_for_function": "harnessc.runtime.tools.schema",
    "schema_for_type": "harnessc.runtime.tools.schema",
    "create_find_tool": "harnessc.runtime.tools.search",
    "create_grep_tool": "harnessc.runtime.tools.search",
    "ALL_DONE_MESSAGE": "harnessc.runtime.tools.tasks",
    "FinishRecord": "harnessc.runtime.tools.tasks",
    "TaskState": "harnessc.runtime.tools.tasks",
    "TaskTool": "harnessc.runtime.tools.tasks",
    "TodoItem": "harnessc.runtime.tools.tasks",
    "create_finish_tool": "harnessc.runtime.tools.tasks",
    "create_task_tools": "harnessc.runtime.tools.tasks",
    "create_todo_tool": "harnessc.runtime.tools.tasks",
    "MAX_BYTES": "harnessc.runtime.tools.truncate",
    "MAX_LINES": "harnessc.runtime.tools.truncate",
    "create_write_tool": "harnessc.runtime.tools.write",
}

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
    from harnessc.runtime.tools.bash import create_bash_tool
    from harnessc.runtime.tools.edit import create_edit_tool
    from harnessc.runtime.tools.ls import create_ls_tool
    from harnessc.runtime.tools.read import create_read_tool
    from harnessc.runtime.tools.search import create_find_tool, create_grep_tool
    from harnessc.runtime.tools.tasks import create_task_tools
    from harnessc.runtime.tools.write import create_write_tool

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


__getattr__, __dir__ = lazy_exports(globals(), _EXPORTS, __all__)
