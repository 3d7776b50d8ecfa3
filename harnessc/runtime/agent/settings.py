"""The harness's settings: model, thinking level, tools, resources, stream options.

A change made mid-run takes effect at the next turn; model, thinking level and active
tools are recorded in the session (so a reopened session continues with them).
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from harnessc.runtime.agent.bus import EventBus
from harnessc.runtime.core.events import (
    ModelUpdateEvent,
    ResourcesUpdateEvent,
    ThinkingLevelUpdateEvent,
    ToolsUpdateEvent,
)
from harnessc.runtime.core.options import (
    AgentHarnessStreamOptions,
    Model,
    ThinkingLevel,
    ToolContextSource,
)
from harnessc.runtime.options.harness_options import AgentHarnessOptions
from harnessc.runtime.providers.base import ToolSpec
from harnessc.runtime.resources.types import AgentHarnessResources
from harnessc.runtime.session.session import Session
from harnessc.runtime.tools.base import AgentTool

if TYPE_CHECKING:
    from harnessc.runtime.options.harness_context import HarnessContext

__all__ = ["DEFAULT_SYSTEM_PROMPT", "Settings"]

DEFAULT_SYSTEM_PROMPT = "You are a helpful assistant."

# What a harness without its own uses; never changed (a change replaces the object).
_NO_RESOURCES = AgentHarnessResources()
_DEFAULT_STREAM_OPTIONS = AgentHarnessStreamOptions()
_NO_TOOL_CONTEXT = ToolContextSource(None)


class _SharedTools:
    """A shared tuple of tools (a generated module's ``shared_tools()``), by name, their
    names and what the model is told of each: made once for all the harnesses given it.
    A harness copies the map and the names before it changes them."""

    __slots__ = ("tools", "by_name", "names", "specs")

    def __init__(self, tools: tuple[AgentTool, ...]) -> None:
        self.tools = tools  # kept: the tuple's id stays its own while this is known
        self.by_name = {tool.name: tool for tool in tools}
        self.names = list(self.by_name)
        self.specs = {
            name: ToolSpec(name=t.name, description=t.description, parameters=t.parameters)
            for name, t in self.by_name.items()
        }


_SHARED_TOOLS: dict[int, _SharedTools] = {}  # by the tuple's id
_SHARED_TOOLS_MAX = 64


def _shared_tools(tools: tuple[AgentTool, ...]) -> _SharedTools:
    known = _SHARED_TOOLS.get(id(tools))
    if known is None or known.tools is not tools:
        known = _SharedTools(tools)
        if len(_SHARED_TOOLS) >= _SHARED_TOOLS_MAX:
            _SHARED_TOOLS.pop(next(iter(_SHARED_TOOLS)), None)
        _SHARED_TOOLS[id(tools)] = known
    return known


class Settings:
    __slots__ = (
        "session",
        "bus",
        "models",
        "model",
        "thinking_level",
        "tools",
        "active_tool_names",
        "resources",
        "pending_resources",
        "stream_options",
        "tool_context",
        "model_recorded",
        "thinking_level_recorded",
        "fallback_from",
        "output_tool",
        "shared",
    )

    def __init__(self, options: AgentHarnessOptions, session: Session, bus: EventBus) -> None:
        self.session = session
        self.bus = bus
        # The options' models, read only (a switch picks another; none is changed).
        self.models: Mapping[str, Model] = options.models
        # A shared tuple of tools (a generated module's) comes with a shared name map,
        # list of names and tool specs: ``shared`` holds them while this harness has not
        # changed its tools (None once it has its own).
        self.shared: _SharedTools | None = None
        names: list[str]
        if isinstance(options.tools, tuple):
            self.shared = _shared_tools(options.tools)
            self.tools, names = self.shared.by_name, self.shared.names
        else:
            self.tools = {tool.name: tool for tool in options.tools}
            names = list(self.tools)
        if options.active_tool_names is not None:
            names = list(options.active_tool_names)
        self.active_tool_names: list[str] = names
        self.model = self.resolve_model(options.model)
        self.thinking_level = options.thinking_level or ThinkingLevel.OFF
        self.resources = options.resources or _NO_RESOURCES
        self.pending_resources: AgentHarnessResources | None = None
        self.stream_options = options.stream_options or _DEFAULT_STREAM_OPTIONS
        self.tool_context = options.tool_context or _NO_TOOL_CONTEXT
        # the session holds a model / thinking level record (else record_if_new writes one)
        self.model_recorded = False
        self.thinking_level_recorded = False
        # The key of the model chosen (spec, --model, /model) while a fallback serves.
        self.fallback_from: str | None = None
        # The typed result's final_result tool (``output:``): callable whatever is active.
        self.output_tool: AgentTool | None = None
        if options.output is not None:
            from harnessc.runtime.options.typed_output import output_tool

            self.output_tool = output_tool(options.output)

    def resolve_model(self, model: str | Model | None) -> Model:
        if isinstance(model, Model):
            return model
        if model is None:
            if not self.models:
                raise ValueError("AgentHarnessOptions needs at least one model")
            return next(iter(self.models.values()))
        if model not in self.models:
            raise KeyError(f"unknown model {model!r}; known: {', '.join(self.models) or 'none'}")
        return self.models[model]

    def model_key(self) -> str:
        for key, model in self.models.items():
            if model is self.model:
                return key
        return self.model.id

    def restore(self) -> None:
        """Take model, thinking level and active tools from the session's context."""
        ctx = self.session.context()
        self.model_recorded = ctx.model is not None
        self.thinking_level_recorded = ctx.thinking_level is not None
        if ctx.model is not None:
            for model in self.models.values():
                if model.id == ctx.model[1] and (model.provider or model.api) == ctx.model[0]:
                    self.model = model
                    break
        if ctx.thinking_level:
            try:
                self.thinking_level = ThinkingLevel(ctx.thinking_level)
            except ValueError:
                pass
        if ctx.active_tool_names is not None:
            self.active_tool_names = [n for n in ctx.active_tool_names if n in self.tools]

    def record_if_new(self) -> None:
        """Write model and thinking level into a session that has neither yet."""
        if not self.model_recorded:
            self.session.append_model_change(self.model.provider or self.model.api, self.model.id)
            self.model_recorded = True
        if not self.thinking_level_recorded:
            self.session.append_thinking_level_change(self.thinking_level.value)
            self.thinking_level_recorded = True

    async def set_model(self, model: str | Model) -> None:
        self.model = self.resolve_model(model)
        self.fallback_from = None
        self.session.append_model_change(self.model.provider or self.model.api, self.model.id)
        await self.bus.emit(
            ModelUpdateEvent(
                key=self.model_key(), provider=self.model.provider, model_id=self.model.id
            )
        )

    async def set_thinking_level(self, level: ThinkingLevel | str) -> None:
        self.thinking_level = ThinkingLevel(level)
        self.session.append_thinking_level_change(self.thinking_level.value)
        await self.bus.emit(ThinkingLevelUpdateEvent(level=self.thinking_level.value))

    async def set_active_tools(self, names: Sequence[str]) -> None:
        unknown = [n for n in names if n not in self.tools]
        if unknown:
            raise KeyError(f"unknown tools: {', '.join(unknown)}; known: {', '.join(self.tools)}")
        self.active_tool_names = list(names)
        self.session.append_active_tools_change(self.active_tool_names)
        await self.bus.emit(ToolsUpdateEvent(active_tool_names=list(self.active_tool_names)))

    def _own_tools(self) -> None:
        """Copy the shared tool map and names before this harness changes them."""
        if self.shared is not None:
            self.tools = dict(self.tools)
            self.active_tool_names = list(self.active_tool_names)
            self.shared = None

    def add_tools(self, tools: Iterable[AgentTool], *, activate: bool = True) -> None:
        self._own_tools()
        for tool in tools:
            self.tools[tool.name] = tool
            if activate and tool.name not in self.active_tool_names:
                self.active_tool_names.append(tool.name)

    def remove_tools(self, names: Iterable[str]) -> list[str]:
        """Drop tools (their source stopped offering them); the names that were there."""
        self._own_tools()
        removed = [name for name in names if self.tools.pop(name, None) is not None]
        if removed:
            self.active_tool_names = [n for n in self.active_tool_names if n not in removed]
        return removed

    def active_tool(self, name: str) -> AgentTool | None:
        if self.output_tool is not None and name == self.output_tool.name:
            return self.output_tool
        if name not in self.active_tool_names:
            return None
        return self.tools.get(name)

    def tool_specs(self) -> list[ToolSpec]:
        if self.shared is not None:  # the shared tools' specs (read only, like the tools)
            specs = self.shared.specs
            return [specs[name] for name in self.active_tool_names if name in specs]
        return [
            ToolSpec(name=t.name, description=t.description, parameters=t.parameters)
            for name in self.active_tool_names
            if (t := self.tools.get(name)) is not None
        ]

    async def apply_resources(self, resources: AgentHarnessResources | None = None) -> None:
        """Apply ``resources`` (default: the ones waiting for the next turn)."""
        resources = resources if resources is not None else self.pending_resources
        if resources is None:
            return
        self.resources = resources
        self.pending_resources = None
        await self.bus.emit(
            ResourcesUpdateEvent(
                skills=[s.name for s in resources.skills],
                prompt_templates=[t.name for t in resources.prompt_templates],
                diagnostics=[f"{d.path}: {d.message}" for d in resources.diagnostics],
                context_files=[f.path for f in resources.context_files],
            )
        )

    async def system_prompt(self, source: Any, host: HarnessContext | None) -> str:
        """``source`` (text, or a callable of the harness), the context files, then the
        skills block (only while ``read`` is active, as pi: without it the model cannot
        open a skill)."""
        if callable(source):
            value = source(host)
            if inspect.isawaitable(value):
                value = await value
            text = str(value)
        else:
            text = source or DEFAULT_SYSTEM_PROMPT
        if self.resources.context_files:
            from harnessc.runtime.resources.context_files import context_prompt_block

            text = f"{text}\n\n{context_prompt_block(self.resources.context_files)}"
        if not self.resources.skills:
            return text
        from harnessc.runtime.resources import skills_prompt_block

        block = skills_prompt_block(self.resources.skills, self.active_tool_names)
        return f"{text}\n\n{block}" if block else text

    async def watch(
        self,
        skill_dirs: Sequence[str],
        template_dirs: Sequence[str],
        apply: Callable[[AgentHarnessResources], Awaitable[None]],
    ) -> Any:
        """A started watcher reloading skills, templates (default: the resources' dirs)
        and the context files the resources were read with."""
        from harnessc.runtime.resources.watch import ResourceWatcher

        resources = self.resources
        skills = list(skill_dirs) or list(getattr(resources, "skill_dirs", []) or [])
        templates = list(template_dirs) or list(getattr(resources, "template_dirs", []) or [])

        async def on_change(resources: AgentHarnessResources, diagnostics: Any = None) -> None:
            await apply(resources)

        watcher = ResourceWatcher(
            skills,
            templates,
            on_change,
            context_files=resources.context_settings,
            cwd=resources.cwd,
        )
        await watcher.start()
        return watcher

    def describe(self) -> dict[str, Any]:
        return {
            "model": self.model.id,
            "thinking_level": self.thinking_level.value,
            "active_tools": list(self.active_tool_names),
        }
