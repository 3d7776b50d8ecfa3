"""Permissions, the first and friendly layer of what a run may do: Claude Code's rule
syntax (``rules``), reading shell commands (``shell_rules``) and paths (``path_rules``)
for those rules, and the gate (``gate``), a ``tool_call`` hook that allows, asks or denies
each call. The kernel-enforced boundary under it is ``runtime/sandbox/``."""
