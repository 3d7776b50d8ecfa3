"""Extensions: the built-in hook providers and the hook forms a spec can declare.

Hook providers (``install(harness)`` registers their handlers and /commands):
``CompactionExtension`` (before-step compaction, ``/compact``), ``SessionIndexExtension``
(full-text index refreshed after each run, ``/search``), ``TurnContinueExtension``
(autonomous continuation, ``/status``), ``TurnNudgeExtension`` (budget notices in tool
results). ``build_extension(name, config_dict)`` builds one by name.

Declarative hooks (each a ``HookSpec`` for ``AgentHarnessOptions.hooks``):
``python_hook`` (a ``module:function``), ``command_hook`` (a shell command with the
Claude Code hook protocol), ``block_rule`` (block tool calls by regex);
``claude_settings_hooks`` (the command hooks of a Claude Code settings file).
"""

from harnessc.runtime.extensions.base import ExtensionConfigError
from harnessc.runtime.extensions.block_rules import block_rule
from harnessc.runtime.extensions.claude_settings import claude_settings_hooks
from harnessc.runtime.extensions.command_hooks import command_hook
from harnessc.runtime.extensions.compaction import CompactionConfig, CompactionExtension
from harnessc.runtime.extensions.python_hooks import python_hook
from harnessc.runtime.extensions.registry import build_extension
from harnessc.runtime.extensions.session_index import SessionIndexConfig, SessionIndexExtension
from harnessc.runtime.extensions.turn_continue import TurnContinueConfig, TurnContinueExtension
from harnessc.runtime.extensions.turn_nudge import TurnNudgeConfig, TurnNudgeExtension
from harnessc.runtime.options.harness_context import Extension

__all__ = [
    "CompactionConfig",
    "CompactionExtension",
    "Extension",
    "ExtensionConfigError",
    "SessionIndexConfig",
    "SessionIndexExtension",
    "TurnContinueConfig",
    "TurnContinueExtension",
    "TurnNudgeConfig",
    "TurnNudgeExtension",
    "block_rule",
    "build_extension",
    "claude_settings_hooks",
    "command_hook",
    "python_hook",
]
