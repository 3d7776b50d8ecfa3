"""One catalog of what a spec can name: built-in tools, extensions and wire APIs.

The spec models (allowed names, defaults), the compiler (the imports and calls a
generated module makes) and the runtime (provider and extension lookup) all read the
entries here, so a new tool source, extension or provider plugs in at one place.

The catalog is light: it imports nothing but the standard library, and every entry
names its objects as ``"package.module:attr"`` strings imported on first use
(``entry.load()``), so reading the catalog never pays for the modules it lists.
Factories are named by the public package that exports them (``harnessc.runtime.tools``),
which is also where a generated module imports them from.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable, Mapping
from typing import Any

from msgspec import Struct

__all__ = [
    "EXTENSIONS",
    "PROVIDERS",
    "TOOLS",
    "CatalogError",
    "ExtensionEntry",
    "ProviderEntry",
    "TOOL_SOURCES",
    "ToolEntry",
    "ToolSourceEntry",
    "extension",
    "extension_for",
    "load_object",
    "provider",
    "provider_for_api",
    "split_path",
    "tool",
    "tool_source",
]


class CatalogError(KeyError):
    """A name the catalog does not list (the message names the known ones)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


def split_path(path: str) -> tuple[str, str]:
    """``"pkg.mod:Name"`` -> ``("pkg.mod", "Name")``."""
    module, sep, attr = path.partition(":")
    if not sep or not module or not attr:
        raise ValueError(f"expected 'package.module:attr', got {path!r}")
    return module, attr


def load_object(path: str) -> Any:
    """Import ``"package.module:attr"`` (``attr`` may be dotted) and return the object."""
    module, attr = split_path(path)
    obj: Any = importlib.import_module(module)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


class ToolEntry(Struct, frozen=True):
    """A built-in tool: ``factory(**options)`` builds it."""

    name: str
    factory: str
    summary: str
    claude_code_name: str | None = None
    """The name Claude Code gives the same tool (command hooks see this one); None: none."""
    options: tuple[str, ...] = ()
    """Spec keys under ``tools[].<name>``, passed to the factory as keyword arguments."""

    def load(self) -> Callable[..., Any]:
        factory: Callable[..., Any] = load_object(self.factory)
        return factory

    def defaults(self) -> dict[str, Any]:
        """Each option's default, read from the factory's signature."""
        params = inspect.signature(self.load()).parameters
        out: dict[str, Any] = {}
        for key in self.options:
            default = params[key].default
            out[key] = None if default is inspect.Parameter.empty else default
        return out

    def build(self, **options: Any) -> Any:
        unknown = sorted(set(options) - set(self.options))
        if unknown:
            raise TypeError(f"tool {self.name!r} takes no option(s) {', '.join(unknown)}")
        return self.load()(**options)


class ExtensionEntry(Struct, frozen=True):
    """A built-in extension: ``factory(config)`` builds it from its config dataclass."""

    name: str
    factory: str
    config: str
    summary: str
    aliases: tuple[str, ...] = ()
    """Other names it is built under (the ``hook/...`` names)."""

    @property
    def order(self) -> int:
        """Install order: extensions are installed in catalog order."""
        return EXTENSIONS.index(self)

    def load(self) -> Callable[..., Any]:
        factory: Callable[..., Any] = load_object(self.factory)
        return factory

    def config_type(self) -> type:
        cls: type = load_object(self.config)
        return cls

    def defaults(self) -> dict[str, Any]:
        """Each config field's default, read from the runtime's dataclass."""
        return _dataclass_defaults(self.config_type())

    def build(self, config: Mapping[str, Any] | None = None) -> Any:
        return self.load()(dict(config) if config is not None else None)


class ProviderEntry(Struct, frozen=True):
    """A wire API: the spec's ``provider`` name, the runtime's api name and its class."""

    name: str
    api: str
    provider: str
    base_url: str
    key_env: str
    """The variable the provider's own tools read the key from (a suggestion; specs name theirs)."""
    summary: str

    def load(self) -> Callable[[], Any]:
        cls: Callable[[], Any] = load_object(self.provider)
        return cls

    def build(self) -> Any:
        return self.load()()


class ToolSourceEntry(Struct, frozen=True):
    """A source of tools found at run time (MCP servers): a spec section of its own.

    ``factory(configs, ...)`` builds the extension that adds the tools; ``config`` is
    the dataclass of one declared item; ``requires`` the module of the optional extra
    it needs (``extra``), checked at build and at start without importing it.
    """

    name: str
    factory: str
    config: str
    requires: str
    extra: str
    summary: str

    def load(self) -> Callable[..., Any]:
        factory: Callable[..., Any] = load_object(self.factory)
        return factory

    def config_type(self) -> type:
        cls: type = load_object(self.config)
        return cls

    def defaults(self) -> dict[str, Any]:
        """Each config field's default, read from the runtime's dataclass."""
        return _dataclass_defaults(self.config_type())

    def available(self) -> bool:
        """Whether the extra is installed (looked up, not imported)."""
        import importlib.util

        return importlib.util.find_spec(self.requires) is not None

    @property
    def install_hint(self) -> str:
        return f"pip install '{self.extra}'"


def _dataclass_defaults(cls: type) -> dict[str, Any]:
    import dataclasses  # the config types are dataclasses: loaded with them

    out: dict[str, Any] = {}
    for item in dataclasses.fields(cls):  # type: ignore[arg-type]
        if not item.init or item.name.startswith("_"):
            continue
        if item.default is not dataclasses.MISSING:
            out[item.name] = item.default
        elif item.default_factory is not dataclasses.MISSING:
            out[item.name] = item.default_factory()
    return out


_TOOLS = "harnessc.runtime.tools"
_EXT = "harnessc.runtime.extensions"
_PROV = "harnessc.runtime.providers"

TOOLS: tuple[ToolEntry, ...] = (
    ToolEntry(
        "bash",
        f"{_TOOLS}:create_bash_tool",
        "Run a bash command in the agent's working directory; option: timeout_s.",
        "Bash",
        options=("timeout_s",),
    ),
    ToolEntry(
        "read",
        f"{_TOOLS}:create_read_tool",
        "Read a text file (with line numbers) or an image.",
        "Read",
    ),
    ToolEntry(
        "write",
        f"{_TOOLS}:create_write_tool",
        "Create or replace a file, with any missing parent folders.",
        "Write",
    ),
    ToolEntry(
        "edit", f"{_TOOLS}:create_edit_tool", "Edit a file by exact text replacement.", "Edit"
    ),
    ToolEntry("ls", f"{_TOOLS}:create_ls_tool", "List a folder's entries.", "LS"),
    ToolEntry(
        "grep",
        f"{_TOOLS}:create_grep_tool",
        "Search file contents for a regular expression or literal text.",
        "Grep",
    ),
    ToolEntry(
        "find", f"{_TOOLS}:create_find_tool", "Find files and folders by glob pattern.", "Glob"
    ),
    ToolEntry(
        "todo",
        f"{_TOOLS}:create_todo_tool",
        "Track the tasks of the run (a todo list; turn_continue reads it).",
        None,  # not TodoWrite: the input shapes differ, hooks see the name "todo"
    ),
    ToolEntry(
        "finish",
        f"{_TOOLS}:create_finish_tool",
        "End the run as completed or blocked, with a summary (turn_continue stops on it).",
    ),
)

EXTENSIONS: tuple[ExtensionEntry, ...] = (
    ExtensionEntry(
        "compaction",
        f"{_EXT}:CompactionExtension",
        f"{_EXT}:CompactionConfig",
        "Compact the context before model steps (prune large tool results, summarise); "
        "adds /compact.",
        aliases=("before_step", "hook/before-step"),
    ),
    ExtensionEntry(
        "session_index",
        f"{_EXT}:SessionIndexExtension",
        f"{_EXT}:SessionIndexConfig",
        "Full-text index of the sessions; adds /search.",
        aliases=("hook/session-index",),
    ),
    ExtensionEntry(
        "turn_continue",
        f"{_EXT}:TurnContinueExtension",
        f"{_EXT}:TurnContinueConfig",
        "Keep an autonomous run going until finish; needs the todo and finish tools.",
        aliases=("hook/turn-continue",),
    ),
    ExtensionEntry(
        "turn_nudge",
        f"{_EXT}:TurnNudgeExtension",
        f"{_EXT}:TurnNudgeConfig",
        "Budget-status notices in tool results as a run grows long.",
        aliases=("hook/turn-nudge",),
    ),
)

TOOL_SOURCES: tuple[ToolSourceEntry, ...] = (
    ToolSourceEntry(
        "mcp",
        "harnessc.runtime.mcp:McpToolset",
        "harnessc.runtime.mcp:McpServerConfig",
        requires="mcp",
        extra="harnessc[mcp]",
        summary="MCP servers whose tools the agent may call (stdio child processes or "
        "streamable HTTP endpoints).",
    ),
)

PROVIDERS: tuple[ProviderEntry, ...] = (
    ProviderEntry(
        "openai",
        "openai-completions",
        f"{_PROV}.openai_completions:OpenAICompletionsProvider",
        "https://api.openai.com/v1",
        "OPENAI_API_KEY",
        "chat completions, also any OpenAI-compatible server",
    ),
    ProviderEntry(
        "anthropic",
        "anthropic-messages",
        f"{_PROV}.anthropic_messages:AnthropicMessagesProvider",
        "https://api.anthropic.com",
        "ANTHROPIC_API_KEY",
        "the Messages API",
    ),
    ProviderEntry(
        "google",
        "google-generative-ai",
        f"{_PROV}.google_generative_ai:GoogleGenerativeAIProvider",
        "https://generativelanguage.googleapis.com/v1beta",
        "GEMINI_API_KEY",
        "the Gemini generateContent API",
    ),
)


def _find(entries: tuple[Any, ...], name: str, what: str) -> Any:
    for entry in entries:
        if entry.name == name:
            return entry
    known = ", ".join(e.name for e in entries)
    raise CatalogError(f"unknown {what} {name!r}; known: {known}")


def tool(name: str) -> ToolEntry:
    """The built-in tool ``name``; raises CatalogError."""
    entry: ToolEntry = _find(TOOLS, name, "built-in tool")
    return entry


def extension(name: str) -> ExtensionEntry:
    """The extension ``name`` (its canonical name); raises CatalogError."""
    entry: ExtensionEntry = _find(EXTENSIONS, name, "extension")
    return entry


def extension_for(name: str) -> ExtensionEntry | None:
    """The extension named ``name`` or one of its aliases (``-`` and ``_`` alike)."""
    key = name.strip()
    for candidate in (key, key.replace("-", "_")):
        for entry in EXTENSIONS:
            if candidate == entry.name or candidate in entry.aliases:
                return entry
    return None


def tool_source(name: str) -> ToolSourceEntry:
    """The tool source ``name`` (``mcp``); raises CatalogError."""
    entry: ToolSourceEntry = _find(TOOL_SOURCES, name, "tool source")
    return entry


def provider(name: str) -> ProviderEntry:
    """The wire API a spec calls ``name`` (``openai``); raises CatalogError."""
    entry: ProviderEntry = _find(PROVIDERS, name, "provider")
    return entry


def provider_for_api(api: str) -> ProviderEntry | None:
    """The entry of the runtime api name ``api`` (``openai-completions``), if built in."""
    for entry in PROVIDERS:
        if entry.api == api:
            return entry
    return None
