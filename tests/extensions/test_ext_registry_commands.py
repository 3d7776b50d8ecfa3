from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

import harnessc.runtime.extensions as extensions
from harnessc.runtime.core.commands import (
    CommandNameError,
    CommandRegistry,
    DuplicateCommandError,
    split_command,
)
from harnessc.runtime.extensions import (
    CompactionExtension,
    Extension,
    ExtensionConfigError,
    SessionIndexExtension,
    TurnContinueExtension,
    TurnNudgeExtension,
    build_extension,
)
from harnessc.runtime.extensions.registry import (
    build_extensions,
    check_commands,
    extension_names,
    register_extension,
)
from harnessc.runtime.providers.scripted import reply_text
from harnessc.runtime.resources import load_resources
from harnessc.runtime.tools.tasks import create_task_tools

from ._ext_support import echo_tool


def test_public_names() -> None:
    assert sorted(extensions.__all__) == sorted(
        [
            "python_hook",
            "command_hook",
            "claude_settings_hooks",
            "block_rule",
            "CompactionExtension",
            "CompactionConfig",
            "SessionIndexExtension",
            "SessionIndexConfig",
            "TurnContinueExtension",
            "TurnContinueConfig",
            "TurnNudgeExtension",
            "TurnNudgeConfig",
            "Extension",
            "build_extension",
            "ExtensionConfigError",
        ]
    )
    for name in extensions.__all__:
        assert getattr(extensions, name) is not None


@pytest.mark.parametrize(
    ("name", "cls"),
    [
        ("compaction", CompactionExtension),
        ("hook/before-step", CompactionExtension),
        ("before_step", CompactionExtension),
        ("session_index", SessionIndexExtension),
        ("session-index", SessionIndexExtension),
        ("hook/turn-continue", TurnContinueExtension),
        ("turn_nudge", TurnNudgeExtension),
    ],
)
def test_build_by_name(name: str, cls: type) -> None:
    extension = build_extension(name, {})
    assert isinstance(extension, cls)
    assert isinstance(extension, Extension)


def test_build_passes_the_config_strictly() -> None:
    ext = build_extension("turn_continue", {"maxContinuations": 4, "stall_limit": 2})
    assert isinstance(ext, TurnContinueExtension)
    assert (ext.config.max_continuations, ext.config.stall_limit) == (4, 2)
    with pytest.raises(ExtensionConfigError, match=r"did you mean 'max_continuations'"):
        build_extension("turn_continue", {"max_continuation": 4})
    with pytest.raises(ExtensionConfigError, match="expected int, got str"):
        build_extension("turn_nudge", {"step_limit": "10"})
    with pytest.raises(ExtensionConfigError, match="mapping"):
        build_extension("turn_nudge", ["step_limit"])  # type: ignore[arg-type]
    with pytest.raises(ExtensionConfigError, match="given twice"):
        build_extension("turn_nudge", {"step_limit": 1, "stepLimit": 2})


def test_unknown_extension() -> None:
    with pytest.raises(ExtensionConfigError, match=r"unknown extension 'turn_nudg'.*turn_nudge"):
        build_extension("turn_nudg")
    assert {"compaction", "session_index", "turn_continue", "turn_nudge"} <= set(extension_names())


def test_duplicate_commands_are_an_error() -> None:
    with pytest.raises(ExtensionConfigError, match=r"/status is contributed twice"):
        check_commands([TurnContinueExtension(), TurnContinueExtension()])
    built = build_extensions({"compaction": {}, "turn_continue": {}, "session_index": None})
    assert [e.name for e in built] == ["compaction", "turn_continue", "session_index"]


def test_register_custom_extension(make_harness: Any) -> None:
    class Hello:
        name = "hello_ext"
        command_names = ("hello",)

        def __init__(self, config: Any) -> None:
            self.greeting = (config or {}).get("greeting", "hi")

        def install(self, harness: Any) -> None:
            harness.commands.register("hello", "say hi", lambda args: self.greeting)
            harness.add_tools([echo_tool("greet")])

    unregister = register_extension("hello_ext", Hello)
    try:
        with pytest.raises(ExtensionConfigError, match="already registered"):
            register_extension("hello_ext", Hello)
        with pytest.raises(ExtensionConfigError, match="already registered"):
            register_extension("compaction", Hello)
        ext = build_extension("hello_ext", {"greeting": "hey"})
        assert isinstance(ext, Extension) and ext.greeting == "hey"  # type: ignore[attr-defined]
        harness, _ = make_harness([], [], extensions=[ext])
        assert "greet" in harness.active_tool_names
        assert asyncio.run(harness.prompt("/hello")).reply == "hey"
    finally:
        unregister()
    with pytest.raises(ExtensionConfigError, match="unknown extension"):
        build_extension("hello_ext")


# -- the command registry ------------------------------------------------------------


def test_registry_basics() -> None:
    registry = CommandRegistry()
    remove = registry.register("ping", "answer pong", lambda args: f"pong {args}".strip(), "test")
    assert "ping" in registry and len(registry) == 1
    with pytest.raises(
        DuplicateCommandError, match=r"/ping is registered twice \(test and other\)"
    ):
        registry.register("ping", "again", lambda args: None, "other")
    for bad in ("", "two words", "skill:x", "a/b"):
        with pytest.raises(CommandNameError):
            registry.register(bad, "bad", lambda args: None)
    assert asyncio.run(registry.run("ping", "x")) == "pong x"
    assert registry.help_text() == "/ping  answer pong"
    remove()
    assert "ping" not in registry
    assert split_command("/ping a b") == ("ping", "a b")
    assert split_command("//not") is None and split_command("plain") is None


def _resources(tmp_path: Path) -> Any:
    skill = tmp_path / "skills" / "deploy"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(
        "---\nname: deploy\ndescription: Deploy the app.\n---\nRun the deploy script.\n"
    )
    templates = tmp_path / "templates"
    templates.mkdir()
    (templates / "review.md").write_text("Review $1 carefully.\n")
    return load_resources(skills=[tmp_path / "skills"], prompt_templates=[templates])


def test_dispatch_order_and_unknown(tmp_path: Path) -> None:
    resources = _resources(tmp_path)
    registry = CommandRegistry()
    registry.register("status", "show status", lambda args: "all good")

    async def main() -> list[Any]:
        return [
            await registry.dispatch("status", "", resources),
            await registry.dispatch("review", "main.py", resources),
            await registry.dispatch("skill:deploy", "now", resources),
            await registry.dispatch("skill:nope", "", resources),
            await registry.dispatch("nope", "", resources),
        ]

    status, review, skill, bad_skill, unknown = asyncio.run(main())
    assert (status.kind, status.text) == ("reply", "all good")
    assert (review.kind, review.text.strip()) == ("prompt", "Review main.py carefully.")
    assert skill.kind == "prompt" and "Run the deploy script." in skill.text
    assert bad_skill.kind == "reply" and "/skill:deploy" in bad_skill.text
    assert unknown.text == (
        "unknown command /nope; known commands: /review, /skill:deploy, /status"
    )


def test_harness_dispatches_every_command_kind(make_harness: Any, tmp_path: Path) -> None:
    todo, finish = create_task_tools()
    harness, _ = make_harness(
        [reply_text("reviewed"), reply_text("again"), reply_text("x")],
        [todo, finish],
        resources=_resources(tmp_path),
        extensions=[
            CompactionExtension(),
            TurnContinueExtension({"max_continuations": 1, "no_progress_limit": 1}),
        ],
    )

    async def main() -> list[Any]:
        return [
            await harness.prompt("/compact"),
            await harness.prompt("/status"),
            await harness.prompt("/review a.py"),
            await harness.prompt("/unknown"),
        ]

    compact, status, review, unknown = asyncio.run(main())
    assert compact.reply == "nothing to compact"
    assert status.reply is not None and status.reply.startswith("continuations left: 1 of 1")
    assert review.reply is None and review.status == "done"
    first_user = harness.messages[0]
    assert getattr(first_user, "content", "").strip() == "Review a.py carefully."
    assert unknown.reply == (
        "unknown command /unknown; known commands: /compact, /review, /skill:deploy, /status"
    )


def test_a_registered_command_can_send_a_prompt() -> None:
    """A handler returning CommandOutcome("prompt", ...) is sent to the model like a
    template (MCP prompts use it); a plain string stays a reply."""
    from harnessc.runtime.core.commands import CommandOutcome, CommandRegistry

    registry = CommandRegistry()
    registry.register("ask", "", lambda args: CommandOutcome("prompt", f"Tell me about {args}."))
    registry.register("echo", "", lambda args: args)
    asked = asyncio.run(registry.dispatch("ask", "cats"))
    echoed = asyncio.run(registry.dispatch("echo", "hi"))
    assert (asked.kind, asked.text, asked.command) == ("prompt", "Tell me about cats.", "ask")
    assert (echoed.kind, echoed.text) == ("reply", "hi")
    assert asyncio.run(registry.run("ask", "dogs")) == "Tell me about dogs."
