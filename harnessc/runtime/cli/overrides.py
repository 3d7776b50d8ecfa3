"""Command-line overrides that change the agent's options before the harness exists:
--base-url / $HARNESSC_BASE_URL for every model, and the checks that fail fast."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from dataclasses import replace
from functools import partial
from typing import Any

from harnessc.runtime.cli.args import UsageError
from harnessc.runtime.options.harness_options import AgentHarnessOptions
from harnessc.runtime.support.envref import unresolved_names

__all__ = [
    "BASE_URL_VARIABLE",
    "apply_overrides",
    "check_base_url",
    "check_model",
    "override_base_url",
    "override_tree_base_url",
]

BASE_URL_VARIABLE = "HARNESSC_BASE_URL"


def check_base_url(base_url: str, source: str) -> None:
    """UsageError, naming ``source`` (``--base-url``, the variable), for a URL without
    http:// or https://."""
    if not base_url.startswith(("http://", "https://")):
        raise UsageError(f"{source}: {base_url!r} has no scheme; write http://{base_url}")


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


def apply_overrides(options: AgentHarnessOptions, args: argparse.Namespace) -> None:
    """--model (checked), --base-url / $HARNESSC_BASE_URL, --max-turns, --replay."""
    if args.model is not None and args.model not in options.models:
        known = ", ".join(options.models) or "none"
        raise UsageError(f"--model: unknown model {args.model!r}; known: {known}")
    base_url = args.base_url or os.environ.get(BASE_URL_VARIABLE) or None
    if base_url:
        source = "--base-url" if args.base_url else BASE_URL_VARIABLE
        override_tree_base_url(options, base_url, source)
    if args.max_turns is not None:
        from harnessc.runtime.core.budget import Budget

        options.budget = replace(options.budget or Budget(), turns=args.max_turns)
    if args.replay is not None:
        from harnessc.runtime.providers.replay import ReplayProvider

        try:
            options.provider = ReplayProvider.from_session_file(args.replay)
        except OSError as exc:
            raise UsageError(f"--replay: cannot read {args.replay}: {exc.strerror}") from None


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
            extension.adjust = adjust


def check_model(key: str, options: AgentHarnessOptions, current: Any) -> None:
    """Fail fast, naming the variable, when the model's API key is not set, or its
    base_url reads a variable that is not set or has no scheme."""
    model = options.models.get(key, current)
    unset = unresolved_names(model.base_url or "")
    if unset:
        raise UsageError(
            f"model {key!r} ({model.id}): environment variable {unset[0]} is not set "
            f"(its base_url reads it); set it, or point every model at a server with "
            f"--base-url URL or ${BASE_URL_VARIABLE}"
        )
    if model.base_url and not model.base_url.startswith(("http://", "https://")):
        raise UsageError(
            f"model {key!r} ({model.id}): base_url {model.base_url!r} has no scheme; "
            f"write http://{model.base_url} (check the spec and its environment variables)"
        )
    variable = model.api_key_env
    if variable and not os.environ.get(variable):
        raise UsageError(
            f"no API key for model {key!r} ({model.id}): set the environment variable {variable}"
        )
