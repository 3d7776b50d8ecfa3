"""Changes a caller makes to an agent's options before a harness is built: another model
(checked), every model sent to another server (``--base-url`` / ``$HARNESSC_BASE_URL``),
the turn budget, a replay of recorded replies, the permission mode; and the checks that
fail fast (an unknown model, a missing API key, a rule naming no tool).

Every door applies them the same way: the terminal from its flags, a server from the
flags it was started with, a durable worker for every run it executes.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from functools import partial
from typing import Any

from msgspec import Struct
from msgspec.structs import replace

from harnessc.runtime.options.harness_options import AgentHarnessOptions
from harnessc.runtime.runs.errors import SetupError
from harnessc.runtime.support.envref import unresolved_names

__all__ = [
    "BASE_URL_VARIABLE",
    "Overrides",
    "apply_overrides",
    "base_url_from",
    "check_base_url",
    "check_model",
    "install_gate",
    "override_base_url",
    "override_sandbox",
    "override_tree_base_url",
]

BASE_URL_VARIABLE = "HARNESSC_BASE_URL"


class Overrides(Struct):
    """What a caller changes (None: the spec's own)."""

    model: str | None = None  # a key of the spec's models
    base_url: str | None = None
    base_url_source: str = "--base-url"  # where base_url came from, for messages
    max_turns: int | None = None
    replay: str | None = None  # a session file whose recorded replies are served
    permission_mode: str | None = None
    sandbox: str | None = None  # --sandbox on|auto|off: the mode of the spec's policy


def base_url_from(given: str | None) -> tuple[str, str] | None:
    """The server every model goes to: ``given`` (``--base-url``), else
    ``$HARNESSC_BASE_URL``; with where it came from. None: the spec's own."""
    if given:
        return given, "--base-url"
    if os.environ.get(BASE_URL_VARIABLE):
        return os.environ[BASE_URL_VARIABLE], BASE_URL_VARIABLE
    return None


def check_base_url(base_url: str, source: str) -> None:
    """SetupError, naming ``source`` (``--base-url``, the variable), for a URL without
    http:// or https://."""
    if not base_url.startswith(("http://", "https://")):
        raise SetupError(f"{source}: {base_url!r} has no scheme; write http://{base_url}")


def override_base_url(options: AgentHarnessOptions, base_url: str, source: str) -> None:
    """Point every model of the agent at ``base_url``. A model whose key variable is unset
    needs no key on a server of this machine (a local model server, the demo)."""
    from urllib.parse import urlsplit

    check_base_url(base_url, source)
    local = (urlsplit(base_url).hostname or "") in ("localhost", "127.0.0.1", "::1")
    models = dict(options.models)
    for key, model in models.items():
        changes: dict[str, Any] = {"base_url": base_url}
        if model.api_key_env and local and not os.environ.get(model.api_key_env):
            changes["api_key_env"] = None
        moved = replace(model, **changes)
        models[key] = moved
        if options.model is model:
            options.model = moved
    options.models = models


def apply_overrides(
    options: AgentHarnessOptions,
    overrides: Overrides,
    warn: Callable[[str], object] | None = None,
) -> Any:
    """``overrides`` on fresh options; the permission gate (None: the agent has none)."""
    if overrides.model is not None and overrides.model not in options.models:
        known = ", ".join(options.models) or "none"
        raise SetupError(f"--model: unknown model {overrides.model!r}; known: {known}")
    if overrides.base_url:
        override_tree_base_url(options, overrides.base_url, overrides.base_url_source)
    if overrides.sandbox is not None:  # the whole tree: a sub-agent only narrows its parent's
        override_sandbox(options, overrides.sandbox)
        _for_subagents(options, partial(override_sandbox, mode=overrides.sandbox))
    if overrides.max_turns is not None:
        from harnessc.runtime.core.budget import Budget

        options.budget = replace(options.budget or Budget(), turns=overrides.max_turns)
    if overrides.replay is not None:
        from harnessc.runtime.providers.replay import ReplayProvider

        try:
            options.provider = ReplayProvider.from_session_file(overrides.replay)
        except OSError as exc:
            raise SetupError(f"--replay: cannot read {overrides.replay}: {exc.strerror}") from None
    return install_gate(options, overrides.permission_mode, warn)


def override_sandbox(options: AgentHarnessOptions, mode: str) -> None:
    """The operator's ``--sandbox MODE``: the spec's policy with that mode."""
    from harnessc.runtime.sandbox.policy import SandboxPolicy

    policy = options.sandbox if options.sandbox is not None else SandboxPolicy("off")
    options.sandbox = policy.with_mode(mode)  # type: ignore[arg-type]


def override_tree_base_url(options: AgentHarnessOptions, base_url: str, source: str) -> None:
    """``override_base_url`` for the agent and every sub-agent it hands work to."""
    override_base_url(options, base_url, source)
    _for_subagents(options, partial(override_base_url, base_url=base_url, source=source))


def _for_subagents(
    options: AgentHarnessOptions, adjust: Callable[[AgentHarnessOptions], None]
) -> None:
    """Apply ``adjust`` to every sub-agent's options too, at any depth (each is built
    when the run first hands work to it)."""
    from harnessc.runtime.agent.subagents import SubAgents

    for extension in options.extensions:
        if isinstance(extension, SubAgents):
            extension.adjust = _both(extension.adjust, adjust)


def _both(
    first: Callable[[AgentHarnessOptions], None] | None,
    then: Callable[[AgentHarnessOptions], None],
) -> Callable[[AgentHarnessOptions], None]:
    if first is None:
        return then

    def adjust(options: AgentHarnessOptions) -> None:
        first(options)
        then(options)

    return adjust


# A PermissionGate exists only once this module is loaded: an agent without
# ``permissions:`` starts without loading the gate, its rules and the shell reader.
_GATE_MODULE = "harnessc.runtime.permissions.gate"


def install_gate(
    options: Any, mode: str | None, warn: Callable[[str], object] | None = None
) -> Any:
    """The agent's gate (its spec's ``permissions:``) in ``mode``; one without rules is
    added when a mode other than default is asked for and the spec has none. A rule
    naming no tool of the agent is a SetupError (the agent does not start)."""
    if mode in (None, "default") and _GATE_MODULE not in sys.modules:
        return None  # no gate was ever made (its module is not loaded) and none is asked for
    from harnessc.runtime.permissions.gate import find_gate, permission_hook
    from harnessc.runtime.permissions.rules import PermissionError_, check_rule_tools

    gate = find_gate(options.hooks)
    if gate is not None:
        tools = [str(getattr(tool, "name", "")) for tool in options.tools]
        if getattr(options, "output", None) is not None:  # the typed result's final_result
            from harnessc.runtime.options.typed_output import OUTPUT_TOOL

            tools.append(OUTPUT_TOOL)
        try:
            problems = check_rule_tools(gate.rules, tools, _mcp_prefixes(options))
        except PermissionError_ as exc:
            raise SetupError(str(exc)) from None
        for problem in problems:
            if warn is not None:
                warn(problem)
    if gate is None and mode not in (None, "default"):
        spec = permission_hook({}, mode or "default")
        options.hooks = [*options.hooks, spec]
        gate = spec.handler
    elif gate is not None and mode is not None:
        gate.set_mode(mode)
    return gate


def _mcp_prefixes(options: Any) -> list[str]:
    """The tool-name prefixes of the agent's MCP servers (their own ``prefix:``)."""
    from harnessc.runtime.mcp.config import tool_prefix

    prefixes: list[str] = []
    for extension in getattr(options, "extensions", ()) or ():
        for server in getattr(extension, "servers", ()) or ():
            name = getattr(server, "name", None)
            if isinstance(name, str):
                prefixes.append(tool_prefix(name, getattr(server, "prefix", None)))
    return prefixes


def check_model(key: str, options: AgentHarnessOptions, current: Any) -> None:
    """Fail fast, naming the variable, when the model's API key is not set, or its
    base_url reads a variable that is not set or has no scheme."""
    model = options.models.get(key, current)
    unset = unresolved_names(model.base_url or "")
    if unset:
        raise SetupError(
            f"model {key!r} ({model.id}): environment variable {unset[0]} is not set "
            f"(its base_url reads it); set it, or point every model at a server with "
            f"--base-url URL or ${BASE_URL_VARIABLE}"
        )
    if model.base_url and not model.base_url.startswith(("http://", "https://")):
        raise SetupError(
            f"model {key!r} ({model.id}): base_url {model.base_url!r} has no scheme; "
            f"write http://{model.base_url} (check the spec and its environment variables)"
        )
    variable = model.api_key_env
    if variable and not os.environ.get(variable):
        raise SetupError(
            f"no API key for model {key!r} ({model.id}): set the environment variable {variable}"
        )
