"""Pure code generation: a validated spec in, module text out (no I/O)."""

from __future__ import annotations

import keyword
import os
import posixpath
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path, PurePath, PurePosixPath

import jinja2

from harnessc import __version__
from harnessc.compiler.output_model import OUTPUT_CLASS, output_model
from harnessc.compiler.pyexpr import (
    LINE_LENGTH,
    Call,
    Code,
    DictExpr,
    Expr,
    ListExpr,
    Lit,
    TupleExpr,
    from_json,
    layout,
    py_string,
    string_lines,
)
from harnessc.runtime.core import catalog
from harnessc.runtime.core.events import EVENT_ALIASES
from harnessc.runtime.core.hooks import canonical_hook_name
from harnessc.runtime.options.typed_output import OUTPUT_TOOL
from harnessc.spec.envref import EnvRef, split_env_refs
from harnessc.spec.load import LoadedSpec, SubAgentRef
from harnessc.spec.models import (
    AgentSpec,
    CheckpointsSpec,
    ContextFilesSpec,
    HookHandlerSpec,
    McpAuthSpec,
    McpSpec,
    ModelSpec,
    SpecModel,
    ToolEntry,
)
from harnessc.spec.sandbox import sandbox_policy

__all__ = ["CompileError", "compile", "hook_moment", "output_name", "render"]

RUNTIME = "harnessc.runtime"
_FIELD_INDENT = 8  # option fields sit inside ``return AgentHarnessOptions(``


class CompileError(ValueError):
    """``compile`` was given a spec that did not validate."""


def output_name(spec: AgentSpec) -> str:
    """The file an agent compiles to, relative to the output folder."""
    return f"{spec.module}.py"


@lru_cache(maxsize=1)
def _template() -> jinja2.Template:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("harnessc.compiler", "templates"),
        autoescape=False,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        undefined=jinja2.StrictUndefined,
    )
    env.filters["py"] = _py_filter
    return env.get_template("agent.py.jinja")


def _py_filter(value: object) -> str:
    """Template filter: any spec value as a safe Python literal."""
    if isinstance(value, Expr):
        return value.flat()
    return Lit(value).flat()


@dataclass(slots=True)
class _Imports:
    """``from module import name`` lines, sorted the way ruff's isort sorts them."""

    names: dict[str, set[str]] = field(default_factory=dict)

    def use(self, module: str, *names: str) -> None:
        self.names.setdefault(module, set()).update(names)

    def lines(self) -> list[str]:
        out = []
        for module in sorted(self.names):
            names = sorted(self.names[module], key=_isort_key)
            single = f"from {module} import {', '.join(names)}"
            if len(single) <= LINE_LENGTH:
                out.append(single)
            else:
                body = "".join(f"    {name},\n" for name in names)
                out.append(f"from {module} import (\n{body})")
        return out


def _isort_key(name: str) -> tuple[int, str]:
    if name.isupper() and len(name) > 1:
        return (0, name)
    return (1, name) if name[:1].isupper() else (2, name)


@dataclass(slots=True)
class _Builder:
    """Turns one spec into expressions, recording the runtime names they use."""

    spec: AgentSpec
    imports: _Imports = field(default_factory=_Imports)
    subagents: list[SubAgentRef] = field(default_factory=list)
    constants: list[str] = field(default_factory=list)  # module-level NAME = "..." lines
    # While the shared models are built: ``${VAR}`` references become parameters of
    # ``shared_models`` ((name, default) -> parameter name); None otherwise.
    env_params: dict[tuple[str, str | None], str] | None = None
    shared_models: Expr | None = None  # the body of ``shared_models()``
    model_params: list[str] = field(default_factory=list)  # its parameters
    shared_tools: list[Expr] = field(default_factory=list)  # the items of ``shared_tools()``

    def rt(self, module: str, name: str) -> str:
        self.imports.use(f"{RUNTIME}{module}", name)
        return name

    def call(self, module: str, func: str, /, *args: Expr, **kwargs: Expr | None) -> Call:
        return self.call_object(f"{RUNTIME}{module}:{func}", *args, **kwargs)

    def use(self, path: str) -> str:
        """Import the object a catalog entry names (``"pkg.mod:Name"``); its name."""
        module, name = catalog.split_path(path)
        self.imports.use(module, name)
        return name

    def call_object(self, path: str, /, *args: Expr, **kwargs: Expr | None) -> Call:
        return Call(
            self.use(path),
            list(args),
            [(k, v) for k, v in kwargs.items() if v is not None],
        )

    def env_str(self, text: str, *, unset_as_written: bool = False) -> Expr:
        """A spec string whose ``${VAR}`` references resolve when the agent runs.
        ``unset_as_written``: a reference without a default stays as written while its
        variable is unset (a model's base_url: ``--base-url`` may stand in for it, and the
        run names the variable when nothing does)."""
        refs = split_env_refs(text)
        if unset_as_written:
            refs = [
                EnvRef(p.name, f"${{{p.name}}}")
                if isinstance(p, EnvRef) and p.default is None
                else p
                for p in refs
            ]
        parts = [self.env_part(part) for part in refs]
        if not parts:
            return Lit("")
        if len(parts) == 1:
            return parts[0]
        return Call('"".join', [ListExpr(parts)])

    def env_part(self, part: str | EnvRef) -> Expr:
        if isinstance(part, str):
            return Lit(part)
        if self.env_params is not None:
            key = (part.name, part.default)
            if key not in self.env_params:
                self.env_params[key] = _parameter_name(part.name, self.env_params.values())
            return Code(self.env_params[key])
        args: list[Expr] = [Lit(part.name)]
        if part.default is not None:
            args.append(Lit(part.default))
        return Call(self.rt("", "env"), args)

    def env_json(self, value: object) -> Expr:
        if isinstance(value, str):
            return self.env_str(value)
        if isinstance(value, dict):
            return DictExpr([(Lit(k), self.env_json(v)) for k, v in value.items()])
        if isinstance(value, list):
            return ListExpr([self.env_json(v) for v in value])
        return Lit(value)

    def spec_path(self, rel: str) -> Expr:
        """A path from the spec, relative to the spec's folder unless absolute."""
        if PurePath(rel).is_absolute() or PurePosixPath(rel).is_absolute():
            return Call("Path", [Lit(rel)])
        normal = posixpath.normpath(PurePath(rel).as_posix())
        return Code("SPEC_DIR" if normal == "." else f"SPEC_DIR / {py_string(normal)}")

    # -- option fields -------------------------------------------------------------------

    def fields(self) -> list[tuple[str, Expr]]:
        spec = self.spec
        out: list[tuple[str, Expr]] = [("session", Code("session"))]
        out.append(("models", self.models()))
        out.append(("model", Lit(spec.start_model)))
        if spec.fallback:
            out.append(("fallback", self.fallback()))
        if spec.tools:
            out.append(("tools", self.tools()))
        if spec.resources.skills or spec.resources.prompt_templates or spec.context_files:
            out.append(("resources", self.resources()))
        if spec.system_prompt is not None:
            out.append(("system_prompt", Code("SYSTEM_PROMPT")))
        if spec.stream is not None:
            out.append(("stream_options", self.stream()))
        if spec.thinking_level is not None:
            level = self.rt("", "ThinkingLevel")
            out.append(("thinking_level", Code(f"{level}.{spec.thinking_level.upper()}")))
        if spec.active_tools is not None:
            out.append(("active_tool_names", ListExpr([Lit(n) for n in spec.active_tools])))
        for key, value in (
            ("steering_mode", spec.steering_mode),
            ("follow_up_mode", spec.follow_up_mode),
        ):
            if value is not None:
                mode = self.rt("", "QueueMode")
                out.append((key, Code(f"{mode}.{value.upper().replace('-', '_')}")))
        if spec.tool_context is not None:
            source = self.rt("", "ToolContextSource")
            out.append(("tool_context", Call(source, [self.env_json(spec.tool_context)])))
        if spec.budget is not None:
            out.append(("budget", self.kwargs_call("", "Budget", spec.budget)))
        hooks = [self.hook(moment, h) for moment, handlers in spec.hooks.items() for h in handlers]
        if spec.claude_settings is not None:  # read when the agent starts: edits need no build
            settings = self.call(
                ".extensions",
                "claude_settings_hooks",
                Lit(spec.claude_settings),
                spec_dir=Code("SPEC_DIR"),
            )
            hooks.append(Code("*" + settings.flat()))
        if spec.permissions is not None:  # a tool_call hook applying the rules
            rules = spec.permissions.model_dump(exclude_defaults=True)
            if spec.output is not None:  # the typed result's own tool needs no approval
                rules["allow"] = [OUTPUT_TOOL, *rules.get("allow", [])]
            config = DictExpr(
                [
                    (Lit(k), ListExpr([Lit(r) for r in v]) if isinstance(v, list) else Lit(v))
                    for k, v in rules.items()
                ]
            )
            hooks.append(self.call(".permissions.gate", "permission_hook", config))
        if hooks:
            out.append(("hooks", ListExpr(hooks)))
        extensions = self.extensions()
        if extensions:
            out.append(("extensions", ListExpr(extensions)))
        if spec.sequential_tools:
            out.append(("sequential_tools", Lit(True)))
        if "tool_timeout_s" in spec.model_fields_set:
            out.append(("tool_timeout_s", Lit(spec.tool_timeout_s)))
        if spec.output is not None:
            out.append(("output", self.output_config()))
        out.append(("sandbox", self.sandbox()))
        if spec.checkpoints is not False:
            out.append(("checkpoints", self.checkpoints()))
        return out

    def checkpoints(self) -> Call:
        """``CheckpointSettings(...)`` with the keys the spec sets."""
        setting = self.spec.checkpoints
        kwargs: dict[str, Expr | None] = {}
        if isinstance(setting, CheckpointsSpec):
            if setting.exclude:
                kwargs["exclude"] = ListExpr([Lit(p) for p in setting.exclude])
            for key in ("max_file_bytes", "max_files"):
                if key in setting.model_fields_set:
                    kwargs[key] = Lit(getattr(setting, key))
            if setting.dir is not None:
                kwargs["folder"] = Call("Path", [self.env_str(setting.dir)])
        return self.call(".core.checkpoint_settings", "CheckpointSettings", **kwargs)

    def sandbox(self) -> Call:
        """``SandboxPolicy(mode, writable=..., unreadable=..., network=...)``: the spec's
        ``sandbox:`` with what its permission rules add (``sandbox_policy``)."""
        policy = sandbox_policy(self.spec)
        kwargs: dict[str, Expr | None] = {"mode": Lit(policy.mode)}
        for key in ("writable", "unreadable", "network"):
            values = getattr(policy, key)
            if values:
                kwargs[key] = ListExpr([Lit(v) for v in values])
        return self.call(".sandbox", "SandboxPolicy", **kwargs)

    def output_config(self) -> Call:
        """``OutputConfig(...)``: the typed result, its type being the module's ``Output``."""
        output = self.spec.output
        assert output is not None
        kwargs: dict[str, Expr | None] = {}
        if output.schema_ is not None:
            kwargs["schema"] = from_json(output.schema_)
        else:
            kwargs["type"] = Code(OUTPUT_CLASS)
        if "retries" in output.model_fields_set:
            kwargs["retries"] = Lit(output.retries)
        if "mode" in output.model_fields_set:
            kwargs["mode"] = Lit(output.mode)
        return self.call(".options.typed_output", "OutputConfig", **kwargs)

    def output_type(self) -> tuple[str | None, list[str]]:
        """The module's ``Output`` (a pydantic model of the schema, or the imported
        type) and the names it takes from ``typing``."""
        output = self.spec.output
        if output is None:
            return None, []
        if output.type is not None:
            imported = self.call(".tools", "import_object", Lit(output.type), Code("SPEC_DIR"))
            comment = "# The agent's typed result: RunResult.output is an instance of it."
            return f"{comment}\n{OUTPUT_CLASS} = {layout(imported, 0, len(OUTPUT_CLASS) + 3)}", []
        assert output.schema_ is not None
        model = output_model(output.schema_)
        self.imports.use(f"{RUNTIME}.core.output_model", *model.pydantic)
        return model.source(), sorted(model.typing)

    def kwargs_call(self, module: str, func: str, model: SpecModel, /, **override: Expr) -> Call:
        """``Name(key=value, ...)`` for the keys the spec sets, in declaration order."""
        return self.call_object(f"{RUNTIME}{module}:{func}", **_set_kwargs(model, override))

    def models(self) -> Expr:
        """``shared_models(env("VAR"), ...)``: the models, made once per process for each
        value of the variables they read (``{}`` without any)."""
        if not self.spec.models:
            return DictExpr([])
        self.env_params = {}
        try:
            self.shared_models = DictExpr(
                [(Lit(k), self.model(m)) for k, m in self.spec.models.items()]
            )
            params = self.env_params
        finally:
            self.env_params = None
        self.model_params = list(params.values())
        return Call("shared_models", [self.env_part(EnvRef(*key)) for key in params])

    def tools(self) -> Expr:
        """The tools, the python and external ones taken from ``shared_tools()`` (made
        once per process); a built-in tool is made for each harness (some keep state)."""
        items: list[Expr | tuple[int, int]] = []  # a run of shared tools: (start, end)
        for entry in self.spec.tools:
            if entry.python is None and entry.external is None:
                items.append(self.tool(entry))
                continue
            index = len(self.shared_tools)
            self.shared_tools.append(self.tool(entry))
            last = items[-1] if items else None
            if isinstance(last, tuple):
                items[-1] = (last[0], index + 1)
            else:
                items.append((index, index + 1))
        runs = [item for item in items if isinstance(item, tuple)]
        if runs and len(items) == 1:
            return Code("shared_tools()")

        def shown(item: Expr | tuple[int, int]) -> Expr:
            if not isinstance(item, tuple):
                return item
            if len(runs) == 1:
                return Code("*shared_tools()")
            return Code(f"*shared_tools()[{item[0]}:{item[1]}]")

        return ListExpr([shown(item) for item in items])

    def model(self, m: ModelSpec) -> Call:
        wire = catalog.provider(m.provider)
        base_url = m.base_url if m.base_url is not None else wire.base_url
        kwargs: dict[str, Expr | None] = {
            "id": self.env_str(m.id),
            "api": Lit(wire.api),
            "provider": Lit(m.provider),
            "name": Lit(m.name) if m.name is not None else None,
            "base_url": self.env_str(base_url, unset_as_written=True),
            "api_key_env": Lit(m.api_key_env) if m.api_key_env else None,
        }
        for key in ("context_window", "max_tokens", "reasoning", "structured_output"):
            if key in m.model_fields_set:
                kwargs[key] = Lit(getattr(m, key))
        if "input" in m.model_fields_set:
            kwargs["input"] = TupleExpr([Lit(kind) for kind in m.input])
        if m.cost is not None:
            kwargs["cost"] = self.kwargs_call("", "ModelCost", m.cost)
        if m.headers:
            kwargs["headers"] = DictExpr([(Lit(k), self.env_str(v)) for k, v in m.headers.items()])
        if m.compat:
            kwargs["compat"] = from_json(m.compat)
        return self.call("", "Model", **kwargs)

    def tool(self, entry: ToolEntry) -> Expr:
        tools = ".tools"
        if entry.python is not None:
            py = entry.python
            function = self.call(tools, "import_object", Lit(py.function), Code("SPEC_DIR"))
            return self.call(
                tools,
                "python_tool",
                function,
                name=Lit(py.name) if py.name is not None else None,
                description=Lit(py.description) if py.description is not None else None,
                parameters=from_json(py.parameters) if py.parameters is not None else None,
                timeout_s=Lit(py.timeout_s) if py.timeout_s is not None else None,
                read_only=Lit(True) if py.read_only else None,
            )
        if entry.external is not None:
            ext = entry.external
            return self.call(
                tools,
                "ExternalTool",
                name=Lit(ext.name),
                description=Lit(ext.description),
                parameters=from_json(ext.parameters),
            )
        builtin = catalog.tool(entry.kind)
        options = entry.options
        kwargs: dict[str, Expr | None] = {}
        if options is not None:
            for key in builtin.options:
                value = getattr(options, key)
                if key in options.model_fields_set and value is not None:
                    kwargs[key] = from_json(value)
        return self.call_object(builtin.factory, **kwargs)

    def resources(self) -> Call:
        res = self.spec.resources
        context = self.spec.context_files
        return self.call(
            ".resources",
            "load_resources",
            skills=ListExpr([self.spec_path(p) for p in res.skills]) if res.skills else None,
            prompt_templates=(
                ListExpr([self.spec_path(p) for p in res.prompt_templates])
                if res.prompt_templates
                else None
            ),
            context_files=self.context_files(context) if context is not False else None,
            cwd=Code("cwd") if context is not False else None,
        )

    def fallback(self) -> Call:
        """``ModelFallback([...], on=..., cooldown_s=...)`` with the keys the spec sets."""
        spec = self.spec
        kwargs: dict[str, Expr | None] = {}
        if "fallback_on" in spec.model_fields_set:
            kwargs["on"] = TupleExpr([Lit(k) for k in spec.fallback_on])
        if "cooldown_s" in spec.model_fields_set:
            kwargs["cooldown_s"] = Lit(spec.cooldown_s)
        return self.call(
            ".providers.fallback",
            "ModelFallback",
            ListExpr([Lit(k) for k in spec.fallback]),
            **kwargs,
        )

    def context_files(self, context: ContextFilesSpec | bool) -> Call:
        """``ContextFileSettings(...)`` with the keys the spec sets."""
        kwargs: dict[str, Expr | None] = {}
        if isinstance(context, ContextFilesSpec):
            fields = context.model_fields_set
            if "names" in fields:
                kwargs["names"] = TupleExpr([Lit(n) for n in context.names])
            if "user" in fields:
                user = context.user
                kwargs["user"] = (
                    Lit(None)
                    if user is None
                    else Lit(user)
                    if user.startswith("~")
                    else Call("str", [self.spec_path(user)])
                )
            if "max_bytes" in fields:
                kwargs["max_bytes"] = Lit(context.max_bytes)
        return self.call(".resources", "ContextFileSettings", **kwargs)

    def stream(self) -> Call:
        stream = self.spec.stream
        assert stream is not None
        override: dict[str, Expr] = {}
        if stream.headers is not None:
            override["headers"] = DictExpr(
                [(Lit(k), self.env_str(v)) for k, v in stream.headers.items()]
            )
        return self.kwargs_call("", "AgentHarnessStreamOptions", stream, **override)

    def hook(self, moment: str, handler: HookHandlerSpec) -> Expr:
        ext = ".extensions"
        name = Lit(hook_moment(moment))
        matcher = Lit(handler.matcher) if handler.matcher is not None else None
        timeout = Lit(handler.timeout_s) if handler.timeout_s is not None else None
        if handler.python is not None:
            return self.call(
                ext,
                "python_hook",
                name,
                Lit(handler.python),
                base_dir=Code("SPEC_DIR"),
                timeout_s=timeout,
                matcher=matcher,
            )
        if handler.command is not None:
            return self.call(
                ext,
                "command_hook",
                name,
                Lit(handler.command),
                matcher=matcher,
                timeout_s=timeout,
                spec_dir=Code("SPEC_DIR"),
            )
        assert handler.block is not None
        return self.call(
            ext,
            "block_rule",
            tool=Lit(handler.block.tool),
            pattern=Lit(handler.block.pattern),
            reason=Lit(handler.reason),
        )

    def extensions(self) -> list[Expr]:
        """One ``Extension(Config(...))`` per extension the spec enables, in install order."""
        out: list[Expr] = []
        for entry in catalog.EXTENSIONS:
            value = getattr(self.spec.extensions, entry.name)
            if value is not None:
                config = self.call_object(entry.config, **_set_kwargs(value, {}))
                out.append(self.call_object(entry.factory, config))
        if self.spec.mcp is not None:
            out.append(self.mcp(self.spec.mcp))
        if self.subagents:
            out.append(self.agents())
        if self.spec.telemetry is not None:
            out.append(self.telemetry())
        return out

    def agents(self) -> Expr:
        """``SubAgents([SubAgent(...), ...], max_depth=..., agent=AGENT_NAME)``: a compiled
        sub-agent is its generated module beside this one; a Claude Code file is baked in."""
        items: list[Expr] = []
        for ref in self.subagents:
            kwargs: dict[str, Expr | None] = {
                "name": Lit(ref.name),
                "description": Lit(ref.description),
            }
            if ref.a2a is not None:
                headers: list[tuple[Expr, Expr]] = [
                    (Lit(k), self.env_str(v)) for k, v in ref.headers.items()
                ]
                kwargs["remote"] = self.call(
                    ".agent.remote_a2a",
                    "RemoteA2A",
                    self.env_str(ref.a2a),
                    headers=DictExpr(headers) if headers else None,
                )
            elif ref.loaded is not None and ref.loaded.spec is not None:
                module = output_name(ref.loaded.spec)
                kwargs["module"] = Code(f"Path(__file__).resolve().parent / {py_string(module)}")
            elif ref.claude is not None:
                claude = ref.claude
                constant = re.sub(r"[^A-Z0-9]+", "_", ref.name.upper()).strip("_") + "_PROMPT"
                self.constants.append(_constant(constant, claude.system_prompt))
                kwargs["system_prompt"] = Code(constant)
                if claude.tools is not None:
                    kwargs["tools"] = TupleExpr([Lit(t) for t in claude.tools])
                if claude.model is not None:
                    kwargs["model"] = Lit(claude.model)
                if claude.permission_mode is not None:
                    kwargs["permission_mode"] = Lit(claude.permission_mode)
                kwargs["source"] = Lit(claude.path.name)
            if ref.budget is not None:
                kwargs["budget"] = self.kwargs_call("", "Budget", ref.budget)
            items.append(self.call(".agent.subagents", "SubAgent", **kwargs))
        return self.call(
            ".agent.subagents",
            "SubAgents",
            ListExpr(items),
            max_depth=Lit(self.spec.max_depth or 1),
            max_parallel=Lit(self.spec.max_parallel) if self.spec.max_parallel else None,
            max_parallel_tree=(
                Lit(self.spec.max_parallel_tree) if self.spec.max_parallel_tree else None
            ),
            agent=Code("AGENT_NAME"),
            build=Code("build_options"),
        )

    def telemetry(self) -> Expr:
        """``TelemetryExtension(TelemetryConfig(...))`` with the keys the spec sets."""
        spec = self.spec.telemetry
        assert spec is not None
        kwargs: dict[str, Expr | None] = {}
        for key in ("exporter", "service_name"):
            if getattr(spec, key) is not None:
                kwargs[key] = Lit(getattr(spec, key))
        if spec.endpoint is not None:
            kwargs["endpoint"] = self.env_str(spec.endpoint)
        if spec.capture_content:
            kwargs["capture_content"] = Lit(True)
        kwargs["agent_name"] = Code("AGENT_NAME")
        config = self.call(".telemetry", "TelemetryConfig", **kwargs)
        return self.call(".telemetry", "TelemetryExtension", config)

    def mcp(self, section: McpSpec) -> Expr:
        """``McpToolset([McpServerConfig(...), ...], from_file=...)``: the servers as wiring."""
        source = catalog.tool_source("mcp")
        servers: list[Expr] = []
        for name, server in section.servers.items():
            kwargs: dict[str, Expr | None] = {"name": Lit(name)}
            for key in type(server).model_fields:
                if key not in server.model_fields_set:
                    continue
                value = getattr(server, key)
                if key in ("command", "url", "cwd"):
                    kwargs[key] = self.env_str(value) if value is not None else None
                elif key == "args":
                    kwargs[key] = ListExpr([self.env_str(v) for v in value])
                elif key in ("env", "headers"):
                    kwargs[key] = DictExpr([(Lit(k), self.env_str(v)) for k, v in value.items()])
                elif key == "auth":
                    kwargs[key] = self.mcp_auth(value) if value is not False else Lit(False)
                else:
                    kwargs[key] = from_json(value)
            if server.command is not None:
                kwargs["base_dir"] = Code("SPEC_DIR")
            servers.append(self.call_object(source.config, **kwargs))
        from_file = self.spec_path(section.from_) if section.from_ is not None else None
        # with active_tools the spec names the MCP tools the model may call
        activate = Lit(False) if self.spec.active_tools is not None else None
        return self.call_object(
            source.factory, ListExpr(servers), from_file=from_file, activate=activate
        )

    def mcp_auth(self, auth: McpAuthSpec) -> Expr:
        """``McpOAuth(...)``: the login of an HTTP server; its secrets are ``env()`` reads."""
        kwargs: dict[str, Expr | None] = {}
        for key in type(auth).model_fields:
            if key not in auth.model_fields_set:
                continue
            value = getattr(auth, key)
            if value is None:
                continue
            if key == "scopes":
                kwargs[key] = ListExpr([self.env_str(v) for v in auth.scope_list or []])
            elif isinstance(value, str) and key != "grant":
                kwargs[key] = self.env_str(value)
            else:
                kwargs[key] = from_json(value)
        module = catalog.split_path(catalog.tool_source("mcp").config)[0]
        return self.call_object(f"{module}:McpOAuth", **kwargs)

    def session_lines(self) -> list[str]:
        """Body of ``if session is None:`` in build_options."""
        if self.spec.session.repo == "memory":
            return [f"session = {self.rt('.session', 'Session')}()"]
        if self.spec.session.repo == "postgres":
            self.rt(".session", "Session")
            create = Call(
                "session_repo().create",
                [],
                [
                    ("cwd", Code("cwd")),
                    ("metadata", DictExpr([(Lit("agent"), Code("AGENT_NAME"))])),
                ],
            )
            return ["session = " + layout(create, 8, 18)]
        self.rt(".session", "Session")
        folder = f"{self.rt('.session', 'resolve_folder')}(SESSIONS_DIR, cwd)"
        create = Call(
            f"{self.rt('.session', 'JsonlSessionRepo')}({folder}).create",
            [],
            [("cwd", Code("cwd")), ("metadata", DictExpr([(Lit("agent"), Code("AGENT_NAME"))]))],
        )
        return ["session = " + layout(create, 8, 18)]

    def session_url(self) -> str | None:
        """Body of ``session_repo()`` (repo: postgres): the store, its URL read when called."""
        url = self.spec.session.url
        if self.spec.session.repo != "postgres" or url is None:
            return None
        repo = Call(self.rt(".session.postgres", "PostgresSessionRepo"), [self.env_str(url)])
        return layout(repo, 4, 11)

    def durable(self) -> str | None:
        """Body of ``durable_config()`` (a spec with ``durable:``)."""
        spec = self.spec.durable
        if spec is None:
            return None
        self.rt("", "run_durable_cli")
        config = self.call(
            ".durable",
            "DurableConfig",
            engine=Lit(spec.engine),
            database_url=self.env_str(spec.database_url)
            if spec.database_url is not None
            else Call(self.rt("", "env"), [Lit("HARNESSC_DURABLE_URL"), Lit("")]),
            queue=Lit(spec.queue.name or self.spec.name),
            concurrency=Lit(spec.queue.concurrency),
            lease_s=Lit(spec.lease_s),
            interrupted_tools=Lit(spec.interrupted_tools)
            if spec.interrupted_tools != "fail"
            else None,
        )
        return layout(config, 4, 11)


def _set_kwargs(model: SpecModel, override: dict[str, Expr]) -> dict[str, Expr | None]:
    """The keys the spec sets (or ``override`` gives), in declaration order."""
    kwargs: dict[str, Expr | None] = {}
    for key in type(model).model_fields:
        if key in override:
            kwargs[key] = override[key]
        elif key in model.model_fields_set:
            kwargs[key] = from_json(getattr(model, key))
    return kwargs


def hook_moment(moment: str) -> str:
    """The moment name the module registers a spec hook under.

    The canonical name, except for aliases that filter their event (``tool.error``,
    ``tool.result``, ``plan.draft``): those keep the name as written, because the
    harness applies the filter only when a handler is registered under the alias.
    """
    alias = EVENT_ALIASES.get(moment)
    if alias is not None and alias[1] is not None:
        return moment
    return canonical_hook_name(moment)


def _parameter_name(variable: str, taken: Iterable[str]) -> str:
    """A parameter named after an environment variable (``OPENAI_BASE_URL`` ->
    ``openai_base_url``), unique among ``taken``."""
    base = re.sub(r"[^0-9a-z_]+", "_", variable.lower()).strip("_") or "value"
    if base[0].isdigit() or keyword.iskeyword(base) or base in ("env", "cache"):
        base = f"var_{base}"
    used = set(taken)
    name, number = base, 1
    while name in used:
        number += 1
        name = f"{base}_{number}"
    return name


def _shared_models(builder: _Builder) -> str | None:
    """The module's ``shared_models`` function (None for a spec without models)."""
    body = builder.shared_models
    if body is None:
        return None
    model = builder.rt("", "Model")
    params = ", ".join(f"{name}: str" for name in builder.model_params)
    head = f"def shared_models({params}) -> dict[str, {model}]:"
    if len(head) > LINE_LENGTH:
        lines = "".join(f"    {name}: str,\n" for name in builder.model_params)
        head = f"def shared_models(\n{lines}) -> dict[str, {model}]:"
    doc = (
        '    """The spec\'s models, made once for each value of the variables they read:\n'
        "    every harness of the module shares them (a harness switches to another model,\n"
        '    it never changes one)."""\n'
    )
    return f"@cache\n{head}\n{doc}    return {layout(body, 4, 11)}"


def _shared_tools(builder: _Builder) -> str | None:
    """The module's ``shared_tools`` function (None without python or external tools)."""
    if not builder.shared_tools:
        return None
    tool = builder.rt(".tools", "AgentTool")
    doc = (
        '    """The spec\'s python and external tools, made once: every harness of the module\n'
        '    shares them (they keep no state; a harness keeps its own list of its tools)."""\n'
    )
    body = layout(TupleExpr(builder.shared_tools), 4, 11)
    return f"@cache\ndef shared_tools() -> tuple[{tool}, ...]:\n{doc}    return {body}"


def _relative(target: Path, start: Path) -> str:
    try:
        rel = os.path.relpath(target, start)
    except ValueError:  # another drive (Windows)
        return target.as_posix()
    return PurePath(rel).as_posix()


def _constant(name: str, text: str) -> str:
    """``NAME = "..."``; a long multi-line text becomes one literal per line."""
    single = f"{name} = {py_string(text)}"
    if len(single) <= LINE_LENGTH or "\n" not in text.rstrip("\n"):
        return single
    body = "".join(f"    {part}\n" for part in string_lines(text))
    return f"{name} = (\n{body})"


def _comment_safe(text: str) -> str:
    return text if text.isprintable() else py_string(text)


def render(loaded: LoadedSpec, out_dir: str | os.PathLike[str]) -> str:
    """The module text of one validated spec, as if written into ``out_dir``."""
    spec = loaded.spec
    if spec is None:
        raise CompileError(f"{loaded.display_path} has errors; nothing to compile")
    out = Path(os.path.abspath(out_dir))
    builder = _Builder(spec, subagents=list(loaded.subagents))
    for name in ("AgentHarnessOptions", "run_cli"):
        builder.rt("", name)
    builder.rt(".providers", "shared_http_clients")
    fields = [
        (name, layout(value, _FIELD_INDENT, _FIELD_INDENT + len(name) + 1, 1))
        for name, value in builder.fields()
    ]
    shared = [code for code in (_shared_models(builder), _shared_tools(builder)) if code]
    session_lines = builder.session_lines()
    session_url = builder.session_url()
    durable = builder.durable()
    output_code, typing_names = builder.output_type()
    sessions_dir: str | None = None
    if spec.session.repo == "jsonl" and spec.session.dir is not None:
        sessions_dir = layout(Call("Path", [builder.env_str(spec.session.dir)]), 0, 15)
    elif spec.session.repo == "jsonl":
        sessions_dir = f'{builder.rt(".session", "DataFolder")}("sessions")'

    return _template().render(
        version=__version__,
        spec_path=_comment_safe(_relative(loaded.path, out)),
        sha256=loaded.sha256,
        agent=spec,
        spec_dir=_relative(loaded.path.parent, out),
        sessions_dir=sessions_dir,
        sessions_in_project=spec.session.dir is not None,
        system_prompt=_constant("SYSTEM_PROMPT", spec.system_prompt)
        if spec.system_prompt is not None
        else None,
        imports=builder.imports.lines(),
        constants=builder.constants,
        shared=shared,
        typing_names=", ".join(["TYPE_CHECKING", *typing_names]),
        output_code=output_code,
        session_lines=session_lines,
        session_url=session_url,
        durable=durable,
        fields=fields,
    )


def compile(  # noqa: A001 - the name the design gives this step
    specs: LoadedSpec | Iterable[LoadedSpec], out_dir: str | os.PathLike[str]
) -> dict[str, str]:
    """``{path relative to out_dir: module text}`` for validated specs; pure."""
    items = [specs] if isinstance(specs, LoadedSpec) else list(specs)
    result: dict[str, str] = {}
    sources: dict[str, Path] = {}
    for loaded in items:
        if loaded.spec is None:
            raise CompileError(f"{loaded.display_path} has errors; nothing to compile")
        _add(result, sources, loaded, out_dir)
    return result


def _add(
    result: dict[str, str],
    sources: dict[str, Path],
    loaded: LoadedSpec,
    out_dir: str | os.PathLike[str],
) -> None:
    """``loaded``'s module and, beside it, the modules of its sub-agent specs."""
    assert loaded.spec is not None
    name = output_name(loaded.spec)
    if name in result:
        if sources[name] == loaded.path:
            return  # a sub-agent spec built as well on its own
        raise CompileError(f"two specs compile to {name}; agent names must be unique")
    result[name] = render(loaded, out_dir)
    sources[name] = loaded.path
    for ref in loaded.subagents:
        if ref.loaded is not None and ref.loaded.spec is not None:
            _add(result, sources, ref.loaded, out_dir)
