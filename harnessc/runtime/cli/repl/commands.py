"""The /commands of the interactive mode.

Built-in: help, status, compact, model, thinking, tools, templates, reload, resume,
quit here; fork, tree, sessions, name (moving between sessions and branches) in
``navigate``; rewind (the files with the tree) in ``rewind``. Anything else (``/skill:NAME``, a prompt template, a
command an extension registered) goes to the harness, which expands or runs it.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from harnessc.runtime.cli.host import ReplHost
from harnessc.runtime.cli.output import format_number, one_line
from harnessc.runtime.cli.pause import budget_limit, pause_reason
from harnessc.runtime.cli.repl.navigate import (
    fork_command,
    name_command,
    sessions_command,
    tree_command,
)
from harnessc.runtime.cli.repl.rewind import rewind_command
from harnessc.runtime.core.commands import did_you_mean
from harnessc.runtime.core.options import ThinkingLevel

if TYPE_CHECKING:
    from harnessc.runtime.agent.harness import AgentHarness

__all__ = ["BUILTIN_COMMANDS", "run_command", "unknown_command"]

Handler = Callable[["ReplHost", str], Awaitable[None]]

BUILTIN_COMMANDS: dict[str, str] = {
    "help": "list the commands, prompt templates and skills",
    "status": "session, model, tools, context size, budget use, pending pull points",
    "compact": "compact the context now (optional instructions for the summary)",
    "model": "show the models, or switch: /model KEY",
    "thinking": "show or set the thinking level: /thinking LEVEL",
    "tools": "show the tools, or set the active ones: /tools NAME... (+NAME / -NAME)",
    "templates": "list the prompt templates and skills (/NAME args, /skill:NAME args)",
    "fork": "continue in a new session copying this branch (up to /fork ENTRY_ID)",
    "tree": "show the session tree; /tree ENTRY_ID [summarize] moves there (files too)",
    "rewind": "list checkpoints and what each would change; /rewind N rewinds there",
    "sessions": "list the sessions; /sessions ID switches to one",
    "name": "show or set this session's name (shown by --sessions): /name NAME",
    "reload": "reload skills and prompt templates from disk",
    "resume": "answer or continue a paused run",
    "quit": "leave (Ctrl-D does too)",
}


async def run_command(repl: ReplHost, text: str) -> None:
    name, _, rest = text[1:].partition(" ")
    args = rest.strip()
    if name == "exit":
        name = "quit"
    handler: Handler | None = _HANDLERS.get(name)
    if handler is None:
        known = repl.harness.commands.known(repl.harness.resources)
        if f"/{name}" not in known and not await repl.harness.commands.load(name):
            repl.say(unknown_command(name, repl.harness.commands.known(repl.harness.resources)))
            return
        # skill:NAME, a prompt template, or an extension's command: the harness runs it.
        await repl.run(lambda: repl.prompt_run(text))
        return
    try:
        await handler(repl, args)
    except Exception as exc:  # a command never ends the REPL
        repl.say(f"/{name} failed: {type(exc).__name__}: {exc}")


def unknown_command(name: str, others: list[str]) -> str:
    """ "unknown command /NAME" with a did-you-mean and every command the REPL knows."""
    everything = sorted({f"/{n}" for n in BUILTIN_COMMANDS} | set(others))
    close = did_you_mean(name, everything)
    guess = f"; did you mean {' or '.join(close)}?" if close else ""
    return f"unknown command /{name}{guess}\ncommands: {' '.join(everything)}  (/help explains)"


# -- commands ------------------------------------------------------------------


async def _help(repl: ReplHost, args: str) -> None:
    harness = repl.harness
    lines = ["commands:"]
    lines += [f"  /{name:<10} {text}" for name, text in BUILTIN_COMMANDS.items()]
    # an extension's command of a built-in name (/compact, /status) is part of the
    # built-in's line above, not a line of its own
    extra = [c for c in harness.commands.commands() if c.name not in BUILTIN_COMMANDS]
    for command in extra:
        lines.append(f"  /{command.name:<10} {command.description}")
    lines += _resource_lines(repl)
    lines.append("Ctrl-C aborts a run (the session is kept), Ctrl-D quits; during a run, a line")
    lines.append("entered at steer> is queued as steering, text typed without Enter stays for")
    lines.append("the next prompt. Tab completes commands and paths, Alt-Enter starts a new line.")
    repl.say("\n".join(lines))


def _resource_lines(repl: ReplHost) -> list[str]:
    resources = repl.harness.resources
    lines: list[str] = []
    if resources.prompt_templates:
        lines.append("prompt templates:")
        for template in resources.prompt_templates:
            hint = f" {template.argument_hint}" if template.argument_hint else ""
            lines.append(f"  /{template.name}{hint}  {one_line(template.description or '', 70)}")
    if resources.skills:
        lines.append("skills:")
        for skill in resources.skills:
            lines.append(f"  /skill:{skill.name}  {one_line(skill.description, 70)}")
    return lines


async def _status(repl: ReplHost, args: str) -> None:
    harness = repl.harness
    session = harness.session
    model = harness.model
    messages = harness.messages
    tokens = _context_tokens(messages)
    active = harness.active_tool_names
    lines = [
        f"session   {session.id}  {session.path or '(in memory)'}  ({len(session)} entries)",
        f"model     {harness.model_key()}: {model.id} ({model.provider or model.api})"
        + (f"  thinking {harness.thinking_level.value}" if model.reasoning else ""),
        f"tools     {', '.join(active) or 'none'}"
        + (f"  ({len(harness.tools)} known)" if len(harness.tools) != len(active) else ""),
        f"context   {len(messages)} messages, ~{tokens} tokens of {model.context_window}",
        "budget    " + _budget_line(harness),
        f"usage     {repl.summary.line()} (this session)",
        f"state     {harness.state.value}",
    ]
    paused = harness.paused_reason
    if paused == "awaiting_tool":
        ids = ", ".join(f"{c.name} {c.id}" for c in harness.pending_tool_calls)
        lines.append(f"paused    waiting for tool results: {ids} (/resume)")
    elif paused == "paused":
        reason = pause_reason(session)
        limit = budget_limit(reason)
        why = f"budget limit {limit} hit" if limit else (reason or "by a hook")
        lines.append(f"paused    {why} (/resume continues)")
    command = harness.commands.get("status")
    if command is not None:
        extra = await harness.commands.run("status", args)
        if extra:
            lines.append(extra)
    repl.say("\n".join(lines))


def _context_tokens(messages: list[Any]) -> int:
    try:
        from harnessc.runtime.compaction import estimate_context_tokens
    except ImportError:
        return sum(len(json.dumps(m.to_dict())) for m in messages) // 4
    return int(estimate_context_tokens(messages))


def _budget_line(harness: AgentHarness) -> str:
    tracker = harness.budget
    parts = []
    for limit in ("turns", "tool_calls", "wall_clock_s", "tokens", "cost_usd"):
        maximum = getattr(tracker.budget, limit)
        used = tracker.used(limit)
        if maximum is None and not used:
            continue
        cap = format_number(maximum) if maximum is not None else "-"
        parts.append(f"{limit} {format_number(used)}/{cap}")
    return ", ".join(parts) or "no limits"


async def _compact(repl: ReplHost, args: str) -> None:
    harness = repl.harness
    before = len(harness.messages)
    if harness.commands.get("compact") is not None:
        # The compaction extension's pipeline (prune, summary, custom services).
        tokens_before = harness.context_tokens(False)
        answer = await harness.commands.run("compact", args)
        after = len(harness.messages)
        if after == before and harness.context_tokens(False) == tokens_before:
            repl.say(answer or "nothing to compact")
            return
        repl.say(
            f"compacted: {before} messages -> {after}, ~{tokens_before} tokens -> "
            f"~{harness.context_tokens(False)}"
        )
        return
    repl.busy = True
    try:
        outcome = await harness.compact(args or None)
    except Exception as exc:
        name = type(exc).__name__
        if "NothingToCompact" in name:
            repl.say("nothing to compact")
            return
        repl.say(f"compaction failed: {exc}")
        return
    finally:
        repl.busy = False
    if outcome is None or outcome is False:
        repl.say("nothing to compact")
        return
    harness.reload_messages()
    tokens = getattr(outcome, "tokens_before", None)
    detail = f", {tokens} tokens before" if tokens is not None else ""
    repl.say(f"compacted: {before} messages -> {len(harness.messages)}{detail}")


async def _model(repl: ReplHost, args: str) -> None:
    harness = repl.harness
    if args:
        if args not in harness.models:
            repl.say(f"unknown model {args!r}; known: {', '.join(harness.models)}")
            return
        await harness.set_model(args)
        model = harness.model
        repl.say(f"model: {args} ({model.id})")
        if model.api_key_env and harness.options.provider is None:
            import os

            if not os.environ.get(model.api_key_env):
                repl.say(f"warning: {model.api_key_env} is not set: calls to {model.id} will fail")
        return
    current = harness.model_key()
    lines = []
    for key, model in harness.models.items():
        mark = "*" if key == current else " "
        lines.append(f"{mark} {key:<12} {model.id} ({model.provider or model.api})")
    repl.say("\n".join(lines) + "\n/model KEY switches")


async def _thinking(repl: ReplHost, args: str) -> None:
    harness = repl.harness
    levels = [level.value for level in ThinkingLevel]
    if not args:
        repl.say(f"thinking: {harness.thinking_level.value} (levels: {', '.join(levels)})")
        return
    if args not in levels:
        repl.say(f"unknown level {args!r}; levels: {', '.join(levels)}")
        return
    await harness.set_thinking_level(args)
    repl.say(f"thinking: {args}")


async def _tools(repl: ReplHost, args: str) -> None:
    harness = repl.harness
    known = harness.tools
    active = harness.active_tool_names
    if not args:
        lines = []
        for name, tool in known.items():
            mark = "*" if name in active else " "
            kind = " (external)" if getattr(tool, "external", False) else ""
            lines.append(f"{mark} {name:<10} {one_line(tool.description, 60)}{kind}")
        repl.say("\n".join(lines) + "\n* = active; /tools NAME... sets them, +NAME / -NAME edits")
        return
    names = list(active)
    words = args.replace(",", " ").split()
    if all(w[0] in "+-" for w in words):
        for word in words:
            name = word[1:]
            if word[0] == "+" and name not in names:
                names.append(name)
            elif word[0] == "-" and name in names:
                names.remove(name)
    else:
        names = words
    try:
        await harness.set_active_tools(names)
    except KeyError as exc:
        repl.say(str(exc.args[0]) if exc.args else str(exc))
        return
    repl.say(f"active tools: {', '.join(names) or 'none'}")


async def _templates(repl: ReplHost, args: str) -> None:
    lines = _resource_lines(repl)
    repl.say("\n".join(lines) if lines else "no prompt templates or skills")


async def _reload(repl: ReplHost, args: str) -> None:
    harness = repl.harness
    options = repl.cli.build_options(session=harness.session, cwd=repl.cli.cwd)
    if options.session is not harness.session:
        from harnessc.runtime.cli.sessions import discard_if_empty

        discard_if_empty(options.session)
    resources = options.resources
    if resources is None:
        repl.say("this agent has no skills, prompt templates or context files")
        return
    repl.printer.muted.add("resources_update")  # the answer below says it once
    try:
        await harness.set_resources(resources)
    finally:
        repl.printer.muted.discard("resources_update")
    problems = [f"  {d.path}: {d.message}" for d in resources.diagnostics]
    repl.say(
        f"reloaded: {len(resources.skills)} skills, {len(resources.prompt_templates)} "
        f"prompt templates, {len(resources.context_files)} context files"
        + ("\n" + "\n".join(problems) if problems else "")
    )


async def _resume(repl: ReplHost, args: str) -> None:
    if repl.harness.paused_reason is None:
        repl.say("nothing to resume: the agent is not paused")
        return
    await repl.answer_pause()


async def _quit(repl: ReplHost, args: str) -> None:
    repl.quit = True


_HANDLERS: dict[str, Handler] = {
    "help": _help,
    "status": _status,
    "compact": _compact,
    "model": _model,
    "thinking": _thinking,
    "tools": _tools,
    "templates": _templates,
    "fork": fork_command,
    "tree": tree_command,
    "rewind": rewind_command,
    "sessions": sessions_command,
    "name": name_command,
    "reload": _reload,
    "resume": _resume,
    "quit": _quit,
}
