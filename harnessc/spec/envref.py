"""``${VAR}`` and ``${VAR:-default}`` references inside spec strings, and where they are.

They are resolved when the agent runs (the generated code calls ``env()``), never at
build time. ``$${`` writes a literal ``${``. The reader of references is the runtime's
(``harnessc.runtime.support.envref``), shared with ``.mcp.json`` files.
"""

from __future__ import annotations

from harnessc.runtime.support.envref import EnvRef, malformed_env_ref, split_env_refs

__all__ = ["ENV_FIELDS", "EnvRef", "malformed_env_ref", "split_env_refs"]

# Where references are expanded ("*": any key, "**": any depth). Elsewhere strings are
# verbatim: system prompts, descriptions and commands may talk about ${HOME} freely.
ENV_FIELDS: tuple[tuple[str, ...], ...] = (
    ("models", "*", "id"),
    ("models", "*", "base_url"),
    ("models", "*", "headers", "*"),
    ("stream", "headers", "*"),
    ("session", "dir"),
    ("session", "url"),
    ("durable", "database_url"),
    ("tool_context", "**"),
    ("mcp", "*", "command"),
    ("mcp", "*", "args", "**"),
    ("mcp", "*", "env", "*"),
    ("mcp", "*", "cwd"),
    ("mcp", "*", "url"),
    ("mcp", "*", "headers", "*"),
    ("agents", "*", "a2a"),
    ("agents", "*", "headers", "*"),
)
