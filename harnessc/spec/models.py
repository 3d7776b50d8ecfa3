"""Pydantic models of an agent spec (the YAML a user writes), version 1.

Decoding is strict: unknown keys are rejected, values are not coerced between types,
negative counts are invalid. Cross-field rules (model references, active tools,
extension needs, paths on disk) live in ``checks.py`` so they run even when a part of
the file fails here, and every problem of a file is reported at once.
"""

from __future__ import annotations

import keyword
import math
import re
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal

from pydantic import (
    AfterValidator,
    AliasChoices,
    AliasGenerator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    GetJsonSchemaHandler,
    ModelWrapValidatorHandler,
    PlainValidator,
    PrivateAttr,
    Tag,
    ValidationInfo,
    WithJsonSchema,
    create_model,
    field_validator,
    model_validator,
)
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema, PydanticCustomError

from harnessc.runtime.core import catalog
from harnessc.runtime.core.hooks import HOOK_NAMES, canonical_hook_name
from harnessc.runtime.core.options import DEFAULT_TOOL_TIMEOUT_S, MAX_SUBAGENT_DEPTH
from harnessc.spec.diagnostics import did_you_mean

__all__ = [
    "BUILTIN_TOOLS",
    "PROVIDER_NAMES",
    "SPEC_VERSION",
    "AgentSpec",
    "BlockRuleSpec",
    "BudgetSpec",
    "CompactionSpec",
    "CostSpec",
    "ExtensionsSpec",
    "ExternalToolSpec",
    "HookHandlerSpec",
    "McpServerSpec",
    "McpSpec",
    "ModelSpec",
    "OUTPUT_MODES",
    "OutputSpec",
    "PythonToolSpec",
    "ResourcesSpec",
    "SessionIndexSpec",
    "SessionSpec",
    "SpecModel",
    "agent_name_problem",
    "StreamSpec",
    "ToolEntry",
    "TurnContinueSpec",
    "TurnNudgeSpec",
    "module_name",
]

SPEC_VERSION = 1

# Names a spec may use, from the runtime's catalog (the one list of them).
PROVIDER_NAMES: tuple[str, ...] = tuple(entry.name for entry in catalog.PROVIDERS)
BUILTIN_TOOLS: tuple[str, ...] = tuple(entry.name for entry in catalog.TOOLS)


def _extension_default(extension: str, key: str) -> Any:
    """The default of ``extension``'s config field ``key``: the runtime dataclass's own."""
    return catalog.extension(extension).defaults()[key]


def _tool_default(tool: str, key: str) -> Any:
    """The default of built-in ``tool``'s option ``key``: its factory's own."""
    return catalog.tool(tool).defaults()[key]


class SpecModel(BaseModel):
    """Strict base: unknown keys are errors, no type coercion, no inf/nan."""

    model_config = ConfigDict(
        extra="forbid",
        strict=True,
        allow_inf_nan=False,
        use_attribute_docstrings=True,
        populate_by_name=False,
    )
    # Hints for keys that belong one level down (shown with "unknown key" errors).
    misplaced_keys: ClassVar[dict[str, str]] = {}

    @model_validator(mode="before")
    @classmethod
    def _remember_model(cls, data: Any, info: ValidationInfo) -> Any:
        # Which model validated which mapping: the diagnostics use it to suggest keys.
        if isinstance(data, dict) and isinstance(info.context, dict):
            info.context.setdefault("models", {})[id(data)] = cls
        return data


def _custom(kind: str, message: str) -> PydanticCustomError:
    return PydanticCustomError(kind, "{message}", {"message": message})


# -- scalar types ---------------------------------------------------------------------

NonNegInt = Annotated[int, Field(ge=0)]
PosInt = Annotated[int, Field(gt=0)]


def _number_check(
    *, gt: float | None = None, ge: float | None = None, le: float | None = None
) -> Callable[[Any], float]:
    """A finite int or float that keeps the type written (120 stays 120 in the output)."""

    def check(value: Any) -> float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise PydanticCustomError("float_type", "Input should be a number")
        if not math.isfinite(value):
            raise PydanticCustomError("finite_number", "Input should be a finite number")
        if gt is not None and not value > gt:
            raise PydanticCustomError("greater_than", "out of range", {"bound": gt})
        if ge is not None and not value >= ge:
            raise PydanticCustomError("greater_than_equal", "out of range", {"bound": ge})
        if le is not None and not value <= le:
            raise PydanticCustomError("less_than_equal", "out of range", {"bound": le})
        return value

    return check


NonNegFloat = Annotated[
    float, PlainValidator(_number_check(ge=0)), WithJsonSchema({"type": "number", "minimum": 0})
]
PosFloat = Annotated[
    float,
    PlainValidator(_number_check(gt=0)),
    WithJsonSchema({"type": "number", "exclusiveMinimum": 0}),
]
Ratio = Annotated[
    float,
    PlainValidator(_number_check(gt=0, le=1)),
    WithJsonSchema({"type": "number", "exclusiveMinimum": 0, "maximum": 1}),
]
NonEmptyStr = Annotated[str, Field(min_length=1)]


def _not_blank(value: str) -> str:
    if not value.strip():
        raise PydanticCustomError("string_too_short", "String should not be blank")
    return value


# Text the runtime refuses when it is only whitespace (hook commands, block reasons).
NonBlankStr = Annotated[str, Field(min_length=1), AfterValidator(_not_blank)]


def _finite_json(value: dict[str, Any]) -> dict[str, Any]:
    """Free-form JSON has no NaN or infinity (the generated module could not spell it)."""
    stack: list[Any] = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, float) and not math.isfinite(item):
            raise PydanticCustomError(
                "finite_number", "Input should hold only finite numbers (no .nan or .inf)"
            )
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return value


JsonObject = Annotated[dict[str, Any], AfterValidator(_finite_json)]

_AGENT_NAME = re.compile(r"^[a-z][a-z0-9_-]{0,63}$")
_TOOL_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]{0,63}$")
_IMPORT_PATH = re.compile(
    r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*:[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$"
)
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_RESERVED_MODULES = frozenset({"harnessc", "test", "tests"}) | frozenset(sys.stdlib_module_names)


def module_name(agent_name: str) -> str:
    """The Python module an agent compiles to: ``-`` becomes ``_``."""
    return agent_name.replace("-", "_")


def agent_name_problem(value: str) -> str | None:
    """Why ``value`` cannot name an agent, or None when it can."""
    if not _AGENT_NAME.fullmatch(value):
        return (
            f"invalid agent name {value!r}: use lowercase letters, digits, '_' and '-', "
            "starting with a letter (at most 64 characters)"
        )
    module = module_name(value)
    if keyword.iskeyword(module) or module in _RESERVED_MODULES:
        return (
            f"agent name {value!r} would compile to module {module}.py, which shadows "
            "a Python keyword or module; pick another name"
        )
    return None


def _check_agent_name(value: str) -> str:
    problem = agent_name_problem(value)
    if problem:
        raise _custom("agent_name", problem)
    return value


def _check_tool_name(value: str) -> str:
    if not _TOOL_NAME.fullmatch(value):
        raise _custom(
            "tool_name",
            f"invalid tool name {value!r}: use letters, digits, '_' and '-' "
            "(at most 64 characters, not starting with a digit or '-')",
        )
    return value


def _check_import_path(value: str) -> str:
    if not _IMPORT_PATH.fullmatch(value):
        raise _custom(
            "import_path",
            f"invalid import path {value!r}: expected 'package.module:function'",
        )
    return value


def _check_env_name(value: str) -> str:
    ref = re.fullmatch(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}", value)
    if ref:
        raise _custom(
            "env_name",
            f"write {ref.group(1)!r}, not {value!r}: api_key_env takes the variable's name",
        )
    if not _ENV_NAME.fullmatch(value):
        raise _custom(
            "env_name",
            f"invalid environment variable name {value!r}: name the variable "
            "(e.g. OPENAI_API_KEY), never the key itself",
        )
    return value


def _check_regex(value: str) -> str:
    try:
        re.compile(value)
    except re.error as exc:
        raise _custom("regex", f"invalid regular expression {value!r}: {exc}") from None
    return value


def _check_version(value: int) -> int:
    if value != SPEC_VERSION:
        raise _custom(
            "version",
            f"unsupported spec version {value}; this harnessc reads version {SPEC_VERSION}",
        )
    return value


def _check_hook_moment(value: str) -> str:
    try:
        canonical_hook_name(value)
    except ValueError:
        raise _custom("hook_moment", _unknown_moment(value)) from None
    return value


def _unknown_moment(value: str) -> str:
    """The message for an unknown moment; a Claude Code event name gets the moment its
    hooks run at (the habit of a settings file)."""
    from harnessc.runtime.extensions.claude_events import (
        CLAUDE_EVENTS,
        CLAUDE_EVENTS_WITHOUT_MOMENT,
    )

    text = f"unknown hook moment {value!r}"
    if value in CLAUDE_EVENTS:
        return (
            f"{text}; did you mean {CLAUDE_EVENTS[value]!r}? ({value} is Claude Code's "
            "name for it; a Claude Code settings file goes under hooks.claude_settings)"
        )
    if value in CLAUDE_EVENTS_WITHOUT_MOMENT:
        return f"{text}: {value} is a Claude Code event harnessc has no moment for"
    return text + did_you_mean(value, HOOK_NAMES)


AgentName = Annotated[
    str,
    AfterValidator(_check_agent_name),
    WithJsonSchema({"type": "string", "pattern": _AGENT_NAME.pattern}),
]
ToolName = Annotated[
    str,
    AfterValidator(_check_tool_name),
    WithJsonSchema({"type": "string", "pattern": _TOOL_NAME.pattern}),
]
_IMPORT_PATH_SCHEMA: dict[str, Any] = {
    "type": "string",
    "pattern": _IMPORT_PATH.pattern,
    "description": "'package.module:function'; the spec's folder comes first on sys.path",
}
ImportPath = Annotated[str, AfterValidator(_check_import_path), WithJsonSchema(_IMPORT_PATH_SCHEMA)]
EnvName = Annotated[
    str,
    AfterValidator(_check_env_name),
    WithJsonSchema({"type": "string", "pattern": _ENV_NAME.pattern}),
]
Regex = Annotated[
    str, AfterValidator(_check_regex), WithJsonSchema({"type": "string", "format": "regex"})
]


def _check_hook_matcher(value: str) -> str:
    from harnessc.runtime.extensions.claude_events import compile_matcher

    try:
        compile_matcher(value)
    except ValueError as exc:
        raise _custom("regex", str(exc)) from None
    return value


# Claude Code's matcher forms: names, ``A|B``, ``A,B``, ``*``, "", or a regex.
HookMatcher = Annotated[
    str, AfterValidator(_check_hook_matcher), WithJsonSchema({"type": "string"})
]
HookMoment = Annotated[
    str,
    AfterValidator(_check_hook_moment),
    WithJsonSchema({"type": "string", "enum": sorted(HOOK_NAMES)}),
]
Version = Annotated[
    int,
    AfterValidator(_check_version),
    WithJsonSchema({"const": SPEC_VERSION, "description": "Spec format version."}),
]


def _one_of(names: tuple[str, ...]) -> Callable[[Any], str]:
    """A validator accepting exactly ``names`` (reported like a Literal's error)."""
    expected = ", ".join(repr(n) for n in names[:-1]) + f" or {names[-1]!r}"

    def check(value: Any) -> str:
        if not isinstance(value, str) or value not in names:
            raise PydanticCustomError(
                "literal_error", "Input should be {expected}", {"expected": expected}
            )
        return value

    return check


ProviderName = Annotated[
    str,
    PlainValidator(_one_of(PROVIDER_NAMES)),
    WithJsonSchema({"type": "string", "enum": list(PROVIDER_NAMES)}),
]
ThinkingLevelName = Literal["off", "minimal", "low", "medium", "high", "xhigh"]
QueueModeName = Literal["one-at-a-time", "all"]


# -- models ---------------------------------------------------------------------------


InputKind = Literal["text", "image"]
FallbackKind = Literal["rate_limit", "overloaded", "server_error", "timeout", "connection"]
_FALLBACK_ON: tuple[FallbackKind, ...] = (
    "rate_limit",
    "overloaded",
    "server_error",
    "timeout",
    "connection",
)


def _default_input() -> list[InputKind]:
    return ["text", "image"]


class CostSpec(SpecModel):
    """Dollars per million tokens."""

    input: NonNegFloat = 0.0
    """Dollars per million input tokens (not read from the cache)."""
    output: NonNegFloat = 0.0
    """Dollars per million output tokens (thinking included)."""
    cache_read: NonNegFloat = 0.0
    """Dollars per million input tokens read from the provider's prompt cache."""
    cache_write: NonNegFloat = 0.0
    """Dollars per million input tokens written to the provider's prompt cache."""


def base_url_problem(value: str | None) -> str | None:
    """A base_url (or the default of its leading ${VAR:-default}) without http(s)://."""
    from harnessc.spec.envref import split_env_refs

    if not value:
        return None
    first = split_env_refs(value)[0]
    literal = first if isinstance(first, str) else first.default
    if literal is None or literal.startswith(("http://", "https://")):
        return None
    return (
        f"base_url {literal!r} has no scheme: write http://{literal} "
        "(or https:// for a remote server)"
    )


class ModelSpec(SpecModel):
    """One model the agent may call."""

    provider: ProviderName
    """Wire API: openai (chat completions, also any OpenAI-compatible server), anthropic, google."""
    id: NonEmptyStr
    """The provider's model id; may hold ${VAR} references."""
    name: str | None = None
    """Display name."""
    base_url: NonEmptyStr | None = None
    """Endpoint; default: the provider's public API. May hold ${VAR} / ${VAR:-default}."""
    api_key_env: EnvName | None = None
    """Name of the environment variable holding the API key (the key is never in the spec)."""
    context_window: PosInt = 128_000
    """Tokens the model can read at once; compaction and /status measure the context against it."""
    max_tokens: PosInt = 16_384
    """Most tokens one reply may have (the request's output limit)."""
    reasoning: bool = False
    """The model supports thinking / reasoning effort."""
    structured_output: bool = False
    """The model (and its server) answers in a given JSON Schema: output.mode auto then uses it (native)."""
    input: list[InputKind] = Field(default_factory=_default_input)
    """What the model reads: text, and image when it accepts images (otherwise an image is sent as a placeholder text)."""
    cost: CostSpec | None = None
    """Prices used to count cost (usage reports, budget.cost_usd); default: all zero."""
    headers: dict[str, str] = Field(default_factory=dict)
    """Extra HTTP headers; values may hold ${VAR} references."""
    compat: JsonObject = Field(default_factory=dict)
    """Switches for OpenAI-compatible servers, e.g. {supports_developer_role: false}."""

    @field_validator("base_url")
    @classmethod
    def _base_url_has_a_scheme(cls, value: str | None) -> str | None:
        problem = base_url_problem(value)
        if problem:
            raise _custom("base_url_scheme", problem)
        return value


class NoConfig(SpecModel):
    """A built-in tool without options."""


class BashSpec(SpecModel):
    timeout_s: PosFloat | None = _tool_default("bash", "timeout_s")
    """Default timeout of one command, in seconds."""


class PythonToolSpec(SpecModel):
    """A Python function exposed as a tool; its parameters come from its signature."""

    function: ImportPath
    """The function, as 'package.module:function'; imported with the spec's folder first on sys.path."""
    name: ToolName | None = None
    """Tool name; default: the function's name."""
    description: str | None = None
    """Default: the function's docstring."""
    parameters: JsonObject | None = None
    """JSON Schema of the arguments; default: derived from the type hints."""
    timeout_s: PosFloat | None = None
    """Seconds one call may run before the agent loop ends it with an error result; default: tool_timeout_s."""
    read_only: bool = False
    """The function only reads (changes no file, has no outside effect): its batches take no workspace checkpoint, and a durable run whose worker stopped during a call runs it again. Undeclared, a python tool may change files."""

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, data: Any) -> Any:
        return {"function": data} if isinstance(data, str) else data

    @classmethod
    def __get_pydantic_json_schema__(
        cls, core_schema: CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        schema = handler.resolve_ref_schema(handler(core_schema))
        return {"anyOf": [_IMPORT_PATH_SCHEMA, schema]}


class ExternalToolSpec(SpecModel):
    """A tool whose result comes from the caller (a pull point: the run waits for it)."""

    name: ToolName
    """Tool name the model calls."""
    description: NonEmptyStr
    """What the tool does, as the model sees it."""
    parameters: JsonObject = Field(default_factory=lambda: {"type": "object", "properties": {}})
    """JSON Schema of the arguments."""


# Options models of the built-in tools that take options (their keys are the catalog
# entry's ``options``); every other built-in takes none.
TOOL_OPTIONS: dict[str, type[SpecModel]] = {"bash": BashSpec}

_TOOL_ENTRY_DOC = (
    "One tool: a built-in name (``read``), or a single key naming the kind with its options."
)
_PYTHON_TOOL_DOC = (
    "A Python function as a tool: 'module:function', or "
    "{function, name, description, parameters, timeout_s, read_only}."
)
_EXTERNAL_TOOL_DOC = (
    "A tool answered by the caller: calling it pauses the run until its result is given "
    "(--resume-with)."
)


class _ToolEntryBase(SpecModel):
    """The rules of a tool entry; ``ToolEntry`` adds one field per kind (from the catalog)."""

    misplaced_keys: ClassVar[dict[str, str]] = {
        key: f"options go under the tool kind, e.g. `python: {{function: mod:func, {key}: ...}}`"
        for key in ("function", "name", "description", "parameters", "read_only")
    } | {"timeout_s": "options go under the tool kind, e.g. `bash: {timeout_s: 60}`"}

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, data: Any) -> Any:
        if isinstance(data, str):
            if data not in BUILTIN_TOOLS:
                hint = did_you_mean(data, (*BUILTIN_TOOLS, "python", "external"))
                raise _custom("tool_kind", f"unknown built-in tool {data!r}{hint}")
            return {data: None}
        return data

    @model_validator(mode="after")
    def _one_kind(self) -> _ToolEntryBase:
        kinds = sorted(self.model_fields_set)
        if len(kinds) != 1:
            found = ", ".join(repr(k) for k in kinds) or "nothing"
            raise _custom(
                "tool_entry",
                f"a tool entry names exactly one tool kind, found {found}; "
                "put options under the kind, e.g. `python: {function: mod:func, name: x}`",
            )
        if getattr(self, "python", None) is None and "python" in kinds:
            raise _custom("tool_entry", "python: expected 'module:function'")
        if getattr(self, "external", None) is None and "external" in kinds:
            raise _custom("tool_entry", "external: expected {name, description, parameters}")
        return self

    @property
    def kind(self) -> str:
        return next(iter(self.model_fields_set))

    @property
    def options(self) -> SpecModel | None:
        """The options written under the kind (None for a bare built-in name)."""
        value: SpecModel | None = getattr(self, self.kind)
        return value

    @property
    def tool_name(self) -> str:
        """The name the model sees."""
        python: PythonToolSpec | None = getattr(self, "python", None)
        external: ExternalToolSpec | None = getattr(self, "external", None)
        if python is not None:
            return python.name or python.function.rsplit(":", 1)[1].rsplit(".", 1)[-1]
        if external is not None:
            return external.name
        return self.kind

    @classmethod
    def __get_pydantic_json_schema__(
        cls, core_schema: CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        schema = dict(handler.resolve_ref_schema(handler(core_schema)))
        schema["minProperties"] = 1
        schema["maxProperties"] = 1
        return {"anyOf": [{"type": "string", "enum": list(BUILTIN_TOOLS)}, schema]}


def _tool_entry_model() -> type[_ToolEntryBase]:
    """``ToolEntry``: a field per built-in tool of the catalog, then python and external."""
    fields: dict[str, Any] = {}
    for entry in catalog.TOOLS:
        options = TOOL_OPTIONS.get(entry.name, NoConfig)
        if tuple(options.model_fields) != entry.options:
            raise RuntimeError(
                f"spec options of tool {entry.name!r} {tuple(options.model_fields)} "
                f"differ from the catalog's {entry.options}"
            )
        fields[entry.name] = (options | None, Field(default=None, description=entry.summary))
    fields["python"] = (PythonToolSpec | None, Field(default=None, description=_PYTHON_TOOL_DOC))
    fields["external"] = (
        ExternalToolSpec | None,
        Field(default=None, description=_EXTERNAL_TOOL_DOC),
    )
    model: type[_ToolEntryBase] = create_model(
        "ToolEntry", __base__=_ToolEntryBase, __module__=__name__, __doc__=_TOOL_ENTRY_DOC, **fields
    )
    return model


if TYPE_CHECKING:

    class ToolEntry(_ToolEntryBase):
        """One tool (the kind fields come from the catalog)."""

        python: PythonToolSpec | None
        external: ExternalToolSpec | None

else:
    ToolEntry = _tool_entry_model()


class BlockRuleSpec(SpecModel):
    tool: Regex
    """Regex over the tool name."""
    pattern: Regex
    """Regex searched in the call's JSON input."""


class HookHandlerSpec(SpecModel):
    """One handler: exactly one of python, command or block."""

    python: ImportPath | None = None
    """'module:function' called with the event (and the harness, if it takes two arguments)."""
    command: NonBlankStr | None = None
    """Shell command speaking Claude Code's hook protocol (event JSON on stdin, exit 2 blocks). Runs in the agent's working directory; a relative program path (hooks/guard.sh) is found in the spec's folder."""
    block: BlockRuleSpec | None = None
    """Block tool calls whose name and input match (tool_call moment only)."""
    matcher: HookMatcher | None = None
    """Tool moments. Command hooks match as Claude Code does, under harnessc's or Claude Code's tool name (bash or Bash; Edit|Write; Edit,Write; * or empty for all; else a regex searched in the name); python hooks: a regex over the whole tool name."""
    timeout_s: PosFloat | None = None
    """Python and command hooks: seconds before the handler is given up (commands: 60)."""
    reason: NonBlankStr | None = None
    """Block rules: the reason given to the model."""

    _NOT_FOR_BLOCK: ClassVar[tuple[str, ...]] = ("matcher", "timeout_s")

    @model_validator(mode="after")
    def _one_handler(self) -> HookHandlerSpec:
        # an explicit null (``block: null``) names no handler
        kinds = [k for k in ("python", "command", "block") if getattr(self, k) is not None]
        if len(kinds) != 1:
            found = ", ".join(repr(k) for k in kinds) or "none"
            raise _custom(
                "hook_handler",
                f"a hook handler has exactly one of 'python', 'command' or 'block', found {found}",
            )
        if kinds[0] == "block":
            for key in self._NOT_FOR_BLOCK:
                if key in self.model_fields_set:
                    raise _custom(
                        "hook_handler",
                        f"'{key}' does not apply to block rules (block.tool selects the tools)",
                    )
        if kinds[0] == "python" and self.matcher is not None:
            _check_regex(self.matcher)
        if kinds[0] == "block" and self.reason is None:
            raise _custom(
                "hook_handler", "a block rule needs a 'reason' (it is shown to the model)"
            )
        if kinds[0] != "block" and "reason" in self.model_fields_set:
            raise _custom("hook_handler", "'reason' applies only to block rules")
        return self

    @property
    def kind(self) -> str:
        return "python" if self.python else "command" if self.command else "block"


class ResourcesSpec(SpecModel):
    skills: list[NonEmptyStr] = Field(default_factory=list)
    """Skill folders or files, relative to the spec's folder."""
    prompt_templates: list[NonEmptyStr] = Field(default_factory=list)
    """Prompt-template folders or files, relative to the spec's folder."""


class ContextFilesSpec(SpecModel):
    names: Annotated[list[NonEmptyStr], Field(min_length=1)] = Field(
        default_factory=lambda: ["AGENTS.md", "CLAUDE.md"]
    )
    """File names looked for in each folder from the working directory up to the root; the first that exists is read."""
    user: str | None = "~/.config/harnessc/AGENTS.md"
    """The user-level context file (read first); null: none. Relative paths: from the spec's folder."""
    max_bytes: PosInt = 65536
    """A longer file is cut at this many bytes (with a note)."""

    @field_validator("names")
    @classmethod
    def _plain_names(cls, value: list[str]) -> list[str]:
        for name in value:
            if "/" in name or "\\" in name or name in (".", ".."):
                raise _custom("context_file_name", f"{name!r} must be a file name, not a path")
        return value


class CheckpointsSpec(SpecModel):
    """Checkpoints of the workspace before and after each tool batch that may change files, so a move in the session tree can rewind the files too (docs/sessions.md)."""

    exclude: list[NonEmptyStr] = Field(default_factory=list)
    """gitignore patterns (rooted at the workspace) of what is never checkpointed, besides what .gitignore files name."""
    max_file_bytes: PosInt = 16 * 1024 * 1024
    """A larger file is left out of checkpoints (and listed as left out)."""
    max_files: PosInt = 100_000
    """A workspace with more files to record is not checkpointed (a notice says so)."""
    dir: NonEmptyStr | None = None
    """The checkpoint store's folder, relative to the agent's working directory (created with a .gitignore); may hold ${VAR} references. Default: the project's folder in the per-user data folder, like the sessions'."""


CheckpointsSetting = Annotated[
    Annotated[CheckpointsSpec, Tag("settings")] | Annotated[bool, Tag("switch")],
    Discriminator(lambda value: "switch" if isinstance(value, bool) else "settings"),
]


class TelemetrySpec(SpecModel):
    exporter: Literal["otlp", "console", "none"] | None = None
    """otlp (HTTP/protobuf to endpoint), console (stderr) or none; default: OTEL_TRACES_EXPORTER, else otlp."""
    endpoint: NonEmptyStr | None = None
    """The OTLP/HTTP base URL (traces go to <endpoint>/v1/traces); default: OTEL_EXPORTER_OTLP_ENDPOINT, else http://localhost:4318. May hold ${VAR}."""
    service_name: NonEmptyStr | None = None
    """service.name of the spans; default: OTEL_SERVICE_NAME, else the agent's name."""
    capture_content: bool = False
    """Record prompts, replies and tool arguments/results on the spans (secrets redacted)."""


ContextFilesSetting = Annotated[
    Annotated[ContextFilesSpec, Tag("settings")] | Annotated[bool, Tag("switch")],
    Discriminator(lambda value: "switch" if isinstance(value, bool) else "settings"),
]


class ExtensionSpecModel(SpecModel):
    """An extension's config: the keys and types here, then the runtime's own checks.

    After the fields validate, the values the spec sets go through the runtime's
    ``decode_config`` (decode, defaults, ``validate()``), the path the agent takes when
    it starts, so a config the agent would refuse is an error at build time. The
    error's field is where the diagnostic points (``errors.py``).
    """

    extension_name: ClassVar[str] = ""

    @model_validator(mode="before")
    @classmethod
    def _one_spelling(cls, data: Any) -> Any:
        """A field given under two of its names (``message`` and ``notice``) is an error."""
        if isinstance(data, dict) and cls.extension_name:
            from harnessc.runtime.extensions.base import ExtensionConfigError
            from harnessc.runtime.extensions.config_names import canonical_config

            try:
                canonical_config(cls.extension_name, cls.model_fields, data)
            except ExtensionConfigError as exc:
                raise _custom("extension_config", str(exc).split(": ", 1)[-1]) from None
        return data

    @model_validator(mode="wrap")
    @classmethod
    def _runtime_validate(
        cls, data: Any, handler: ModelWrapValidatorHandler[ExtensionSpecModel]
    ) -> ExtensionSpecModel:
        from harnessc.runtime.extensions.base import ExtensionConfigError, decode_config
        from harnessc.runtime.extensions.config_names import written_key

        model = handler(data)
        name = cls.extension_name
        values = {key: getattr(model, key) for key in model.model_fields_set}
        try:
            decode_config(catalog.extension(name).config_type(), values, extension=name)
        except ExtensionConfigError as exc:
            prefix = f"{exc.extension or 'extension'}" + (f".{exc.field}" if exc.field else "")
            message = str(exc).removeprefix(f"{prefix}: ")
            field = written_key(name, data, exc.field)  # the key as the spec spells it
            raise PydanticCustomError(
                "extension_config", "{message}", {"message": message, "field": field}
            ) from None
        return model


def _seed_names(extension: str) -> ConfigDict:
    """Keys also accepted under their camelCase names and harnessc's aliases."""
    from harnessc.runtime.extensions.config_names import accepted_names

    return ConfigDict(
        alias_generator=AliasGenerator(
            validation_alias=lambda field: AliasChoices(*accepted_names(extension, field))
        )
    )


class CompactionSpec(ExtensionSpecModel):
    """Before-step compaction (also built as hook/before-step)."""

    extension_name: ClassVar[str] = "compaction"
    model_config = _seed_names("compaction")

    enabled: bool = _extension_default("compaction", "enabled")
    """Compact automatically before model steps; false leaves only /compact."""
    reserve_tokens: NonNegInt = _extension_default("compaction", "reserve_tokens")
    """Compact when the context exceeds the context window minus this."""
    keep_recent_tokens: NonNegInt = _extension_default("compaction", "keep_recent_tokens")
    """Newest tokens kept verbatim after a summary."""
    prune_tool_result_bytes: NonNegInt = _extension_default("compaction", "prune_tool_result_bytes")
    """Tool results larger than this are cut to their head and tail (0: never)."""
    prune_keep_bytes: NonNegInt = _extension_default("compaction", "prune_keep_bytes")
    """Bytes of head and tail, together, that a pruned tool result keeps; below prune_tool_result_bytes."""
    prune_protect_steps: NonNegInt = _extension_default("compaction", "prune_protect_steps")
    """Newest tool batches that are never pruned."""
    trigger_ratio: Ratio = _extension_default("compaction", "trigger_ratio")
    """Fraction of the context window that triggers the summary service."""
    chars_per_token: PosFloat = _extension_default("compaction", "chars_per_token")
    """Characters per token when estimating the context's size."""
    contribute_commands: bool = _extension_default("compaction", "contribute_commands")
    """Register /compact."""


class SessionIndexSpec(ExtensionSpecModel):
    """Full-text index of the sessions, refreshed after each turn (SQLite FTS5)."""

    extension_name: ClassVar[str] = "session_index"
    model_config = _seed_names("session_index")

    search_limit: Annotated[int, Field(gt=0, le=50)] = _extension_default(
        "session_index", "search_limit"
    )
    """Results of /search."""
    contribute_commands: bool = _extension_default("session_index", "contribute_commands")
    """Register /search."""


class TurnContinueSpec(ExtensionSpecModel):
    """Keep an autonomous run going until finish is called; needs the todo and finish tools."""

    extension_name: ClassVar[str] = "turn_continue"
    model_config = _seed_names("turn_continue")

    max_continuations: NonNegInt = _extension_default("turn_continue", "max_continuations")
    """Continue prompts sent at most per run; 0 disables the extension."""
    stall_limit: NonNegInt = _extension_default("turn_continue", "stall_limit")
    """Stop when this many tool calls in a row are the same call (name and input); 0 keeps the default."""
    no_progress_limit: NonNegInt = _extension_default("turn_continue", "no_progress_limit")
    """Stop after this many continuations in a row without a tool call, todo update or finish; 0 keeps the default."""
    require_finish: bool = _extension_default("turn_continue", "require_finish")
    """Work is outstanding until finish is called."""
    require_todos_done: bool = _extension_default("turn_continue", "require_todos_done")
    """Work is outstanding while a todo item is not done (at least one of the two requirements must be true)."""
    continue_prompt: NonEmptyStr = _extension_default("turn_continue", "continue_prompt")
    """Message that continues the run; the outstanding todo items are listed after it."""


class TurnNudgeSpec(ExtensionSpecModel):
    """Budget-status notices appended to tool results as a turn grows long. The camelCase keys (stepInterval, limitMessage, ...) are accepted too."""

    extension_name: ClassVar[str] = "turn_nudge"
    model_config = _seed_names("turn_nudge")

    step_interval: NonNegInt = _extension_default("turn_nudge", "step_interval")
    """Steps between two notices; 0 keeps the default."""
    time_interval_minutes: NonNegFloat = _extension_default("turn_nudge", "time_interval_minutes")
    """Minutes between two notices; 0 keeps the default."""
    step_limit: NonNegInt = _extension_default("turn_nudge", "step_limit")
    """From this many steps on every tool result gets limit_message; 0 keeps the default."""
    time_limit_minutes: NonNegFloat = _extension_default("turn_nudge", "time_limit_minutes")
    """From this many minutes on every tool result gets limit_message; 0 keeps the default."""
    message: NonEmptyStr = _extension_default("turn_nudge", "message")
    """Text appended to a tool result at each interval; {steps} and {elapsed} are filled in (no other placeholders). Also accepted as notice (harnessc's former name)."""
    limit_message: NonEmptyStr = _extension_default("turn_nudge", "limit_message")
    """Text appended to every tool result once a limit is reached; {steps} and {elapsed} are filled in."""


# The spec model of each extension of the catalog (its keys are config fields of the
# runtime's dataclass; the defaults are read from it).
EXTENSION_SPECS: dict[str, type[ExtensionSpecModel]] = {
    "compaction": CompactionSpec,
    "session_index": SessionIndexSpec,
    "turn_continue": TurnContinueSpec,
    "turn_nudge": TurnNudgeSpec,
}

_EXTENSIONS_DOC = (
    "Built-in hook providers; an empty value (``session_index: {}``) enables one with defaults."
)


class _ExtensionsBase(SpecModel):
    """The rules of the extensions section; ``ExtensionsSpec`` adds a field per extension."""

    @field_validator("*", mode="before")
    @classmethod
    def _empty_means_defaults(cls, value: Any) -> Any:
        return {} if value is None else value


def _extensions_model() -> type[_ExtensionsBase]:
    """``ExtensionsSpec``: one optional section per extension of the catalog, in install order."""
    names = [entry.name for entry in catalog.EXTENSIONS]
    if set(names) != set(EXTENSION_SPECS):
        raise RuntimeError(
            f"spec models of extensions {sorted(EXTENSION_SPECS)} differ from the catalog's "
            f"{sorted(names)}"
        )
    fields: dict[str, Any] = {
        entry.name: (
            EXTENSION_SPECS[entry.name] | None,
            Field(default=None, description=entry.summary),
        )
        for entry in catalog.EXTENSIONS
    }
    model: type[_ExtensionsBase] = create_model(
        "ExtensionsSpec",
        __base__=_ExtensionsBase,
        __module__=__name__,
        __doc__=_EXTENSIONS_DOC,
        **fields,
    )
    return model


if TYPE_CHECKING:

    class ExtensionsSpec(_ExtensionsBase):
        """The extensions section (a field per catalog extension)."""

else:
    ExtensionsSpec = _extensions_model()


def _source_default(source: str, key: str) -> Any:
    """The default of tool source ``source``'s config field ``key``: the runtime's own."""
    return catalog.tool_source(source).defaults()[key]


_MCP_SERVER_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")
_MCP_PREFIX = re.compile(r"^[A-Za-z0-9_-]{0,48}$")
_MCP_STDIO_ONLY = ("args", "env", "cwd", "unsandboxed")
_MCP_HTTP_ONLY = ("headers", "auth")


def _check_mcp_url(value: str) -> str:
    # Only the parts known at build time: ${VAR:-default} checks with its default,
    # a reference without a default is not checked (the agent checks it at start).
    from harnessc.spec.envref import EnvRef, split_env_refs

    parts = split_env_refs(value)
    if any(isinstance(p, EnvRef) and p.default is None for p in parts):
        return value
    text = "".join(p if isinstance(p, str) else (p.default or "") for p in parts)
    match = re.fullmatch(r"(https?)://([^/\s?#]+)(\S*)", text)
    if match is None:
        raise _custom(
            "mcp_url",
            f"invalid url {text!r}: an MCP server over HTTP needs an http:// or https:// URL "
            "(e.g. http://127.0.0.1:8765/mcp)",
        )
    host = match.group(2).rsplit("@", 1)[-1]
    port = host.rsplit(":", 1)[1] if re.search(r":\d*$", host) else None
    if port is not None and (not port.isdigit() or not 0 < int(port) < 65536):
        raise _custom("mcp_url", f"invalid url {text!r}: bad port {port!r}")
    return value


McpUrl = Annotated[
    str,
    Field(min_length=1),
    AfterValidator(_check_mcp_url),
    WithJsonSchema({"type": "string", "pattern": r"^(https?://|\$\{)"}),
]


def _env_only(value: str) -> str:
    """A secret: one ``${NAME}`` reference, never the secret itself."""
    from harnessc.spec.envref import EnvRef, split_env_refs

    parts = split_env_refs(value)
    if len(parts) != 1 or not isinstance(parts[0], EnvRef) or parts[0].default is not None:
        raise _custom(
            "env_secret",
            "a secret is never written in the spec: name the environment variable that "
            "holds it, e.g. ${NOTES_CLIENT_SECRET}",
        )
    return value


EnvSecret = Annotated[
    str,
    Field(min_length=1),
    AfterValidator(_env_only),
    WithJsonSchema({"type": "string", "pattern": r"^\$\{[A-Za-z_][A-Za-z0-9_]*\}$"}),
]


def _check_https_url(value: str) -> str:
    if "${" not in value and not re.fullmatch(r"https://[^/\s]+/\S+", value):
        raise _custom(
            "mcp_auth_url",
            f"invalid url {value!r}: an https:// URL with a path "
            "(e.g. https://example.com/harnessc/client.json)",
        )
    return value


class McpAuthSpec(SpecModel):
    """How the agent logs in to an HTTP MCP server that needs authorization (the MCP authorization specification, OAuth 2.1); the names follow Claude Code's oauth object. Without auth, a server that answers 401 gets this login with the defaults (dynamic registration, PKCE); auth: false turns it off."""

    grant: Literal["authorization_code", "client_credentials"] = "authorization_code"
    """authorization_code: a person logs in in a browser (PKCE; the run asks whoever is at the terminal); client_credentials: the agent's own credentials (client_id with client_secret or private_key), no person."""
    client_id: NonEmptyStr | None = None
    """A client registered with the authorization server beforehand (may hold ${VAR}); default: harnessc registers itself (dynamic client registration) or uses client_metadata_url."""
    client_secret: EnvSecret | None = None
    """The registered client's secret, as ${VAR} (never the secret itself)."""
    scopes: list[NonBlankStr] | NonBlankStr | None = None
    """Scopes asked for on top of what the server's challenge names (a list, or one space-separated string as in .mcp.json)."""
    callback_port: Annotated[int, Field(gt=0, lt=65536)] | None = None
    """Port of the login's redirect, http://localhost:PORT/callback (the one registered for client_id); default: one chosen at the first login and kept."""
    client_metadata_url: Annotated[str, AfterValidator(_check_https_url)] | None = None
    """A client ID metadata document (https URL) used as the client id where the authorization server supports it, instead of registering."""
    token_endpoint_auth_method: (
        Literal["client_secret_basic", "client_secret_post", "none", "private_key_jwt"] | None
    ) = None
    """How the client authenticates at the token endpoint; default: what the registration or the server's metadata says."""
    private_key: EnvSecret | None = None
    """client_credentials with private_key_jwt: a PEM private key, as ${VAR}, that signs the client's assertion."""
    signing_algorithm: NonEmptyStr | None = None
    """The private_key's JWT algorithm (RS256 by default; ES256, ...)."""
    issuer: NonEmptyStr | None = None
    """The authorization server the client's credentials belong to (its issuer URL): they are sent to no other."""

    @model_validator(mode="after")
    def _credentials(self) -> McpAuthSpec:
        if self.grant == "client_credentials":
            if self.client_id is None:
                raise _custom("mcp_auth", "grant: client_credentials needs a client_id")
            if self.client_secret is None and self.private_key is None:
                raise _custom(
                    "mcp_auth", "grant: client_credentials needs a client_secret or a private_key"
                )
        elif self.private_key is not None:
            raise _custom("mcp_auth", "private_key applies only to grant: client_credentials")
        if self.client_secret is not None and self.client_id is None:
            raise _custom("mcp_auth", "client_secret needs the client_id it belongs to")
        return self

    @property
    def scope_list(self) -> list[str] | None:
        if self.scopes is None:
            return None
        return self.scopes.split() if isinstance(self.scopes, str) else list(self.scopes)


class McpServerSpec(SpecModel):
    """One MCP server: ``command`` starts a child process (stdio), ``url`` opens a streamable-HTTP session."""

    command: NonBlankStr | None = None
    """Executable of a stdio server, looked up on PATH as given (a path is relative to the spec's folder)."""
    args: list[str] = Field(default_factory=list)
    """Arguments of the command; relative paths that exist beside the spec resolve against its folder."""
    env: dict[EnvName, str] = Field(default_factory=dict)
    """Variables added to the child's environment (the agent's, with credentials removed); values may hold ${VAR}."""
    cwd: NonEmptyStr | None = None
    """Working directory of the child, relative to the spec's folder; default: the spec's folder."""
    url: McpUrl | None = None
    """Endpoint of a streamable-HTTP server; may hold ${VAR} / ${VAR:-default}."""
    headers: dict[str, str] = Field(default_factory=dict)
    """HTTP headers of every request (e.g. Authorization); values may hold ${VAR}."""
    tools: list[NonEmptyStr] | None = None
    """Allow-list of the server's own tool names (search, not mcp__notes__search); default: every tool."""
    exclude: list[NonEmptyStr] = Field(default_factory=list)
    """The server's own tool names to leave out (instead of tools)."""
    prefix: Annotated[str, Field(pattern=_MCP_PREFIX.pattern)] | None = None
    """Prefix of the tool names; default mcp__<server>__ (Claude Code's names)."""
    timeout_s: PosFloat = _source_default("mcp", "timeout_s")
    """Seconds a call may take, and the start-up (connect, initialize, list) too."""
    required: bool = _source_default("mcp", "required")
    """false: a server that cannot start is a warning and the agent goes on without it."""
    auth: McpAuthSpec | Literal[False] | None = None
    """The OAuth login of an HTTP server (url): its client and grant. Default: a server that answers 401 gets the login with dynamic registration (none when headers hold an Authorization); false: never. Tokens are kept per user, owner-only (docs/mcp.md)."""
    protocol_version: Literal["auto", "2025-11-25", "2026-07-28"] = "auto"
    """The MCP revision to speak: auto (the newest both sides support: server/discover, else the initialize handshake), 2025-11-25 (the handshake), 2026-07-28 (stateless requests)."""
    unsandboxed: NonBlankStr | None = None
    """Why this stdio server runs outside the agent's sandbox, with the agent's own access (harnessc check prints it); default: it runs inside."""

    @model_validator(mode="after")
    def _one_transport(self) -> McpServerSpec:
        if (self.command is None) == (self.url is None):
            raise _custom(
                "mcp_server",
                "an MCP server has exactly one of 'command' (a stdio child process) "
                "or 'url' (streamable HTTP)",
            )
        wrong = _MCP_STDIO_ONLY if self.url is not None else _MCP_HTTP_ONLY
        for key in wrong:
            if key in self.model_fields_set:
                other = "command" if self.url is not None else "url"
                raise _custom("mcp_server", f"'{key}' applies only to servers with '{other}'")
        if self.tools is not None and self.exclude:
            raise _custom("mcp_server", "give 'tools' (an allow-list) or 'exclude', not both")
        return self

    def tool_prefix(self, server: str) -> str:
        return self.prefix if self.prefix is not None else f"mcp__{server}__"


class McpSpec(SpecModel):
    """MCP servers by name, each an ``mcp.<name>`` table (its tools appear as mcp__<name>__<tool>), and ``from:`` a .mcp.json file."""

    model_config = ConfigDict(extra="allow")

    __pydantic_extra__: dict[str, McpServerSpec] = Field(init=False)  # type: ignore[assignment]

    from_: NonEmptyStr | None = Field(default=None, alias="from")
    """A Claude Code / Claude Desktop file with an mcpServers object (relative to the spec's folder), read when the agent starts; servers named here win."""

    @property
    def servers(self) -> dict[str, McpServerSpec]:
        return dict(self.__pydantic_extra__ or {})


class SubAgentBudgetSpec(SpecModel):
    """Hard limits of one hand-over to a sub-agent (its run, from the hand-over to its answer); hitting one pauses the whole run."""

    turns: PosInt | None = None
    """Most model steps of the sub-agent's run."""
    tool_calls: PosInt | None = None
    """Most tool calls of the sub-agent's run."""
    wall_clock_s: PosFloat | None = None
    """Most seconds the sub-agent's run may spend working (the clock stops while the run is paused)."""
    tokens: PosInt | None = None
    """Most tokens of the sub-agent's replies (cached ones included)."""
    cost_usd: PosFloat | None = None
    """Most dollars the sub-agent's run may cost (from its models' cost)."""


class SubAgentSpec(SpecModel):
    """One sub-agent: another harnessc spec (``spec:``), a Claude Code subagent file (``from:``) or a remote A2A agent (``a2a:``)."""

    spec: NonEmptyStr | None = None
    """Another harnessc spec (relative to this spec's folder): its own models, tools, hooks and budget."""
    from_: NonEmptyStr | None = Field(default=None, alias="from")
    """A Claude Code subagent file (.claude/agents/*.md), as it is: frontmatter name, description, tools, model, permissionMode; the body is its system prompt."""
    a2a: NonEmptyStr | None = None
    """A remote A2A agent: its URL or its agent card's (https://host/.well-known/agent-card.json); may hold ${VAR} references. Its input-required pauses this run; what it reports it used counts against this run's budget (needs the a2a-sdk: pip install 'harnessc[a2a]')."""
    headers: dict[str, str] | None = None
    """a2a: HTTP headers of every request to the remote agent; a credential comes from the environment (Authorization: Bearer ${REMOTE_TOKEN})."""
    description: NonEmptyStr | None = None
    """What the model is told the sub-agent does; default: the spec's or the file's description (a2a: a line naming the URL)."""
    budget: SubAgentBudgetSpec | None = None
    """Limits of each of this sub-agent's hand-overs, beside the tree's one budget (and the sub-agent's own spec's): the tightest holds. Hitting one pauses the whole run like the tree's budget; a resume raising that limit by name lets the sub-agent go on."""

    @model_validator(mode="after")
    def _one_source(self) -> SubAgentSpec:
        given = [v for v in (self.spec, self.from_, self.a2a) if v is not None]
        if len(given) != 1:
            raise _custom("subagent_source", "a sub-agent needs exactly one of spec, from or a2a")
        if self.headers is not None and self.a2a is None:
            raise _custom("subagent_headers", "headers are only sent to an a2a sub-agent")
        if self.budget is not None and self.a2a is not None:
            raise _custom(
                "subagent_budget",
                "a remote a2a agent runs under its own limits: budget is for spec and from sub-agents",
            )
        if self.a2a is not None and not re.match(r"^(https?://|\$\{)", self.a2a):
            raise _custom("subagent_a2a", "a2a must be an http:// or https:// URL")
        for name, value in (self.headers or {}).items():
            literal = len(_without_env_refs(value).split()) > 1 or "${" not in value
            if name.lower() in _CREDENTIAL_HEADERS and literal:
                raise _custom(
                    "subagent_headers",
                    f"the {name} header holds a credential: keep it in the environment "
                    f"({name}: Bearer ${{REMOTE_TOKEN}})",
                )
        return self


_CREDENTIAL_HEADERS = frozenset({"authorization", "proxy-authorization", "x-api-key", "api-key"})


class AgentsSpec(SpecModel):
    """The sub-agents this agent may hand work to (its ``task`` tool), by name; ``from:`` a folder of Claude Code subagent files (every *.md there)."""

    model_config = ConfigDict(extra="allow")

    __pydantic_extra__: dict[AgentName, SubAgentSpec] = Field(init=False)  # type: ignore[assignment]

    from_: NonEmptyStr | None = Field(default=None, alias="from")
    """A folder of Claude Code subagent files (relative to the spec's folder): each *.md is a sub-agent named by its frontmatter name."""

    @property
    def entries(self) -> dict[str, SubAgentSpec]:
        return dict(self.__pydantic_extra__ or {})


OUTPUT_MODES: tuple[str, ...] = ("auto", "native", "tool", "prompted")


class OutputSpec(SpecModel):
    """The agent's typed result: a JSON Schema or a Python type, validated before the run ends."""

    schema_: JsonObject | None = Field(default=None, alias="schema")
    """A JSON Schema the answer must match (the generated module exports a pydantic model of it)."""
    type: ImportPath | None = None
    """A Python type beside the spec (pydantic model, dataclass, TypedDict), as 'module:Name'."""
    retries: NonNegInt = 2
    """Invalid answers sent back to the model (with the errors) before the run fails (output_invalid)."""
    mode: Literal["auto", "native", "tool", "prompted"] = "auto"
    """native: the provider's structured output; tool: a final_result tool the model calls; prompted: the schema in the instructions; auto: native where the model declares structured_output, else tool."""

    @model_validator(mode="after")
    def _schema_or_type(self) -> OutputSpec:
        if (self.schema_ is None) == (self.type is None):
            raise _custom("output_kind", "output needs exactly one of schema and type")
        return self


class BudgetSpec(SpecModel):
    """Hard limits of one run; a soft threshold warns first. Hitting one pauses the run."""

    turns: PosInt | None = None
    """Most model steps (one model call with its tool calls) in one run."""
    tool_calls: PosInt | None = None
    """Most tool calls in one run."""
    wall_clock_s: PosFloat | None = None
    """Most seconds one run may spend working (the clock stops while the run is paused)."""
    tokens: PosInt | None = None
    """Most input plus output tokens in one run."""
    cost_usd: PosFloat | None = None
    """Most dollars one run may cost (from the models' cost)."""
    soft_ratio: Ratio | None = None
    """Fraction of a limit at which a budget warning is emitted (default 0.8)."""


class SessionSpec(SpecModel):
    repo: Literal["jsonl", "memory", "postgres"] = "jsonl"
    """jsonl: pi v3 session files; memory: nothing is written; postgres: rows in PostgreSQL (extra harnessc[postgres])."""
    dir: NonEmptyStr | None = None
    """Session folder, relative to the agent's working directory (created with a .gitignore); may hold ${VAR} references. Default: the project's folder in the per-user data folder, $XDG_DATA_HOME/harnessc/projects/<project>/sessions (docs/sessions.md)."""
    url: NonEmptyStr | None = None
    """repo: postgres: the database URL, read when the agent runs; use a ${VAR} reference (e.g. ${DATABASE_URL}) so no password is in the spec."""

    @model_validator(mode="after")
    def _url_for_postgres(self) -> SessionSpec:
        if self.repo == "postgres" and self.url is None:
            raise _custom("session_url", "repo: postgres needs url (e.g. url: ${DATABASE_URL})")
        if self.repo != "postgres" and self.url is not None:
            raise _custom("session_url", f"url is only used with repo: postgres, not {self.repo}")
        if self.url is not None and _LITERAL_PASSWORD.search(_without_env_refs(self.url)):
            raise _custom(
                "session_url",
                "url holds a password: keep it in the environment (url: ${DATABASE_URL})",
            )
        return self


_LITERAL_PASSWORD = re.compile(r"://[^/@:]*:[^/@]+@")


def _without_env_refs(text: str) -> str:
    return re.sub(r"\$\{[^}]*\}", "", text)


class DurableQueueSpec(SpecModel):
    """The queue durable runs are submitted to and workers take them from."""

    name: Annotated[str, Field(pattern=r"^[A-Za-z0-9_.-]{1,64}$")] | None = None
    """Queue name; default: the agent's name."""
    concurrency: PosInt = 8
    """Runs one worker process executes at once (--worker --concurrency overrides it)."""


class DurableSpec(SpecModel):
    """Runs as durable workflows (DBOS Transact, extra harnessc[durable]): every model call and tool execution is checkpointed, a dead worker's runs are finished by another."""

    engine: Literal["dbos"] = "dbos"
    """The durable-execution engine; only dbos."""
    database_url: NonEmptyStr | None = None
    """DBOS's system database: sqlite:///PATH (one machine; a relative path is relative to the agent's working directory) or postgresql://... (workers on many machines); may hold ${VAR} references. Default: $HARNESSC_DURABLE_URL when set, else durable.sqlite in the project's per-user data folder (docs/sessions.md)."""
    queue: DurableQueueSpec = Field(default_factory=DurableQueueSpec)
    """Queue name and per-worker concurrency."""
    lease_s: Annotated[float, Field(gt=0, le=86400)] = 30.0
    """A worker silent for longer than this many seconds is presumed dead: another live worker recovers its unfinished runs."""
    interrupted_tools: Literal["fail", "rerun"] = "fail"
    """A tool with outside effects (all but read, ls, grep, find and tools marked read-only) whose worker stopped while it ran: fail (default) does not run it again and gives the model an error result saying so (at most once); rerun runs it again on recovery (at least once)."""

    @model_validator(mode="after")
    def _no_literal_password(self) -> DurableSpec:
        url = self.database_url
        if url is not None and _LITERAL_PASSWORD.search(_without_env_refs(url)):
            raise _custom(
                "durable_url",
                "database_url holds a password: keep it in the environment (${HARNESSC_DURABLE_URL})",
            )
        return self

    @field_validator("database_url")
    @classmethod
    def _known_scheme(cls, url: str | None) -> str | None:
        """sqlite:///PATH or postgresql://... (a URL from the environment is checked when
        it is read)."""
        if url is None:
            return None
        known = re.match(r"^(sqlite:///.|postgres(ql)?(\+psycopg)?://)", url)
        if not url.startswith("${") and known is None:
            scheme = url.split(":", 1)[0] if ":" in url else url
            raise _custom(
                "durable_url",
                f"must be sqlite:///PATH or postgresql://..., not {scheme!r}",
            )
        return url


class StreamSpec(SpecModel):
    """Options of every provider request."""

    transport: NonEmptyStr | None = None
    """Transport preference passed to providers; the built-in HTTP providers always stream over HTTP (SSE) and ignore it."""
    timeout_ms: PosInt | None = None
    """Longest wait for the network (connect, response head, each streamed chunk), in milliseconds; default: 30 s to connect, 600 s otherwise."""
    max_retries: NonNegInt | None = None
    """Retries of a failed request (rate limits, 5xx, connection errors) before giving up; default 3."""
    max_retry_delay_ms: NonNegInt | None = None
    """Longest wait before a retry, in milliseconds, even when the server asks for more; default 60000."""
    headers: dict[str, str] | None = None
    """Extra HTTP headers of every request; values may hold ${VAR} references."""
    metadata: JsonObject | None = None
    """Request metadata: Anthropic sends user_id; OpenAI-compatible servers only with compat {supports_metadata: true}."""
    cache_retention: Literal["none", "short", "long"] | None = None
    """Prompt caching: none, short (the default) or long (Anthropic 1 h, OpenAI 24 h where supported)."""


CLAUDE_SETTINGS_KEY = "claude_settings"


def _hooks_schema(schema: dict[str, Any]) -> None:
    """``hooks`` also takes ``claude_settings: <path>`` beside the moments."""
    names = schema.get("propertyNames")
    if isinstance(names, dict) and isinstance(names.get("enum"), list):
        names["enum"] = sorted([*names["enum"], CLAUDE_SETTINGS_KEY])
    handlers = schema.get("additionalProperties")
    if isinstance(handlers, dict):
        schema["additionalProperties"] = {"anyOf": [handlers, {"type": "string"}]}


PermissionRule = Annotated[str, Field(min_length=1, examples=["Bash(git status)", "Read(**)"])]


class SandboxFilesystemSpec(SpecModel):
    """What programs may write and may not read, besides the defaults."""

    writable: list[NonEmptyStr] = Field(default_factory=list)
    """Paths writable besides the workspace and a private /tmp: ~/x (home), /x, ./x (workspace). Edit/Write allow rules add theirs."""
    unreadable: list[NonEmptyStr] = Field(default_factory=list)
    """Paths no program may open, as Read rules name them (./.env, ~/.config/app, *.pem at any depth). Credential files (~/.ssh, ~/.aws, ...) and harnessc's data folder always are; Read deny rules add theirs."""


class SandboxNetworkSpec(SpecModel):
    """The hosts programs may reach (through the sandbox's proxy); none: no network."""

    allow: list[NonEmptyStr] = Field(default_factory=list)
    """Hosts, e.g. pypi.org, *.github.com, localhost:8080; WebFetch(domain:HOST) allow rules add theirs."""


class SandboxSpec(SpecModel):
    """The kernel-enforced boundary of every program the agent runs for the model (bash, command hooks, stdio MCP servers)."""

    mode: Literal["on", "auto", "off"] = "on"
    """on: required (the agent does not start where it cannot be enforced); auto: where it can; off: none."""
    filesystem: SandboxFilesystemSpec = Field(default_factory=SandboxFilesystemSpec)
    """Writable and unreadable paths."""
    network: SandboxNetworkSpec = Field(default_factory=SandboxNetworkSpec)
    """Hosts programs may reach."""


def _check_depth(value: int) -> int:
    if value > MAX_SUBAGENT_DEPTH:
        raise _custom(
            "max_depth",
            f"max_depth {value} is over the ceiling of {MAX_SUBAGENT_DEPTH}: each level is a "
            "whole agent running inside its parent's tool call; nest at most "
            f"{MAX_SUBAGENT_DEPTH} levels",
        )
    return value


MaxDepth = Annotated[
    int,
    Field(gt=0),
    AfterValidator(_check_depth),
    WithJsonSchema({"type": "integer", "exclusiveMinimum": 0, "maximum": MAX_SUBAGENT_DEPTH}),
]


def _sandbox_switch(value: Any) -> Any:
    """``sandbox: on`` / ``off`` / ``auto`` (YAML may read on and off as booleans) as a
    section with that mode."""
    if isinstance(value, bool):
        return {"mode": "on" if value else "off"}
    if isinstance(value, str):
        if value not in ("on", "auto", "off"):
            raise _custom(
                "sandbox",
                f"sandbox must be on, off, auto or a section (mode, filesystem, network), "
                f"not {value!r}",
            )
        return {"mode": value}
    return value


SandboxSetting = Annotated[SandboxSpec, BeforeValidator(_sandbox_switch)]


def _sandbox_schema(schema: dict[str, Any]) -> None:
    """``sandbox:`` takes a section, a mode alone, or a boolean (on / off)."""
    options = schema.pop("anyOf", [])
    schema["anyOf"] = [
        *(o for o in options if o.get("type") != "null"),
        {"enum": ["on", "auto", "off"]},
        {"type": "boolean"},
        {"type": "null"},
    ]


class PermissionsSpec(SpecModel):
    """Permission rules for tool calls, as Claude Code writes them: Tool(specifier).

    Tool names are harnessc's or Claude Code's (Bash, Read, Write, Edit, LS, Grep, Glob).
    Rules are checked as Claude Code checks them: deny, then ask, then allow. A Bash rule
    names a command anywhere in the command line; an allow needs every command allowed.
    `ask` prompts in the interactive mode and pauses a run without a terminal.
    """

    allow: list[PermissionRule] = Field(default_factory=list)
    """Calls that run without asking, e.g. Bash(git status), Bash(pytest *), Read(**)."""
    ask: list[PermissionRule] = Field(default_factory=list)
    """Calls that need the user's yes: a y / n / always question in -i, a pause elsewhere."""
    deny: list[PermissionRule] = Field(default_factory=list)
    """Calls that never run, in any permission mode, e.g. Bash(rm -rf *), Read(./.env)."""
    default: Literal["allow", "ask", "deny"] = "allow"
    """What happens to a call no rule names."""

    @field_validator("allow", "ask", "deny")
    @classmethod
    def _rules_parse(cls, rules: list[str]) -> list[str]:
        from harnessc.runtime.permissions.rules import PermissionError_, parse_rule

        for rule in rules:
            try:
                parse_rule(rule)
            except PermissionError_ as exc:
                raise _custom("permission_rule", str(exc)) from None
        return rules


class AgentSpec(SpecModel):
    """A harnessc agent: models, tools, resources, hooks, extensions, budget and sessions."""

    model_config = ConfigDict(title="harnessc agent spec")

    version: Version
    """Spec format version; always 1."""
    name: AgentName
    """Agent name; compiles to <name>.py ('-' becomes '_')."""
    description: str = ""
    """What the agent is for (documentation; not sent to the model)."""
    models: Annotated[dict[NonEmptyStr, ModelSpec], Field(min_length=1)]
    """The models the agent may use, by key (the key is what model, --model and /model name)."""
    model: NonEmptyStr | None = None
    """Key of the model to start with; default: the first one."""
    fallback: list[NonEmptyStr] = Field(default_factory=list)
    """Keys of the models a request goes to, in order, when the model in use fails after its retries."""
    fallback_on: list[FallbackKind] = Field(default_factory=lambda: list(_FALLBACK_ON))
    """The failures that move a request to the next fallback model (never context overflow, auth or a bad request)."""
    cooldown_s: NonNegFloat = 60
    """Seconds a failed model is skipped before it is tried again."""
    thinking_level: ThinkingLevelName | None = None
    """Reasoning effort to start with (models with reasoning: true); default off. --thinking and /thinking change it."""
    system_prompt: str | None = None
    """Default: "You are a helpful assistant." Kept verbatim (no ${VAR} expansion)."""
    tools: list[ToolEntry] = Field(default_factory=list)
    """The tools: built-in names, python functions and external tools."""
    active_tools: list[NonEmptyStr] | None = None
    """Names of the tools the model may call; default: every tool."""
    mcp: McpSpec | None = None
    """MCP servers whose tools the agent may call; needs the mcp extra (pip install 'harnessc[mcp]')."""
    resources: ResourcesSpec = Field(default_factory=ResourcesSpec)
    """Skills and prompt templates loaded from files."""
    context_files: ContextFilesSetting = True
    """The project's context files (AGENTS.md, CLAUDE.md) put into the system prompt; false: none."""
    hooks: dict[HookMoment, list[HookHandlerSpec]] = Field(
        default_factory=dict, json_schema_extra=_hooks_schema
    )
    """Handlers by moment; every name and alias in docs/hooks.md is accepted. claude_settings: a Claude Code settings file (relative to the spec's folder) whose command hooks run as they are."""
    extensions: ExtensionsSpec = Field(default_factory=ExtensionsSpec)
    """Built-in extensions to install; an empty value (``turn_nudge: {}``) installs one with its defaults."""
    agents: AgentsSpec | None = None
    """Sub-agents this agent may hand work to with its task tool (Claude Code's Agent tool); each runs with its own context, under this run's budget and pause."""
    max_depth: MaxDepth | None = None
    """How deep sub-agents may nest (default 1: sub-agents cannot delegate further; at most 10)."""
    max_parallel: PosInt | None = None
    """Most hand-overs of this agent running at once; the rest wait, in the order the model asked for them. Default: no limit."""
    max_parallel_tree: PosInt | None = None
    """Most hand-overs running at once in this agent's whole tree (nested ones included; read from the top agent's spec, at least the tree's depth); the rest wait, in order. Default: no limit."""
    budget: BudgetSpec | None = None
    """Hard limits of one run (hitting one pauses the run); default: unlimited."""
    permissions: PermissionsSpec | None = None
    """Which tool calls run, are asked about, or are refused (Claude Code's Tool(specifier) rules)."""
    sandbox: SandboxSetting | None = Field(default=None, json_schema_extra=_sandbox_schema)
    """The kernel-enforced boundary of bash, command hooks and stdio MCP servers: on, off, or a section (filesystem, network); default: on where this machine can enforce it."""
    session: SessionSpec = Field(default_factory=SessionSpec)
    """Where sessions are kept."""
    durable: DurableSpec | None = None
    """Durable runs on DBOS (queue, workers, recovery); default: runs live in the agent's process only."""
    telemetry: TelemetrySpec | None = None
    """OpenTelemetry traces and metrics (needs the otel extra: pip install 'harnessc[otel]'); without it the OTEL_* variables may still turn them on."""
    stream: StreamSpec | None = None
    """Options of every provider request (timeouts, retries, headers, caching)."""
    steering_mode: QueueModeName | None = None
    """How messages typed while the agent works reach it: one-at-a-time (the default) or all at once, before its next step."""
    follow_up_mode: QueueModeName | None = None
    """How queued follow-up messages are delivered when the agent would stop: one-at-a-time (the default) or all at once."""
    tool_context: JsonObject | None = None
    """Value handed to every tool call; string values may hold ${VAR} references."""
    sequential_tools: bool = False
    """Run the tool calls of one reply one at a time."""
    tool_timeout_s: PosFloat = DEFAULT_TOOL_TIMEOUT_S
    """Seconds one tool call may run before the agent loop ends it with an error result (the model sees it; the run goes on). A python tool's own timeout_s wins."""
    output: OutputSpec | None = None
    """The typed result: RunResult.output holds the validated value; the command line prints it as JSON."""
    checkpoints: CheckpointsSetting = True
    """Checkpoints of the workspace around tool batches that may change it (rewind with /rewind, /tree, --rewind); false: none."""

    _claude_settings: str | None = PrivateAttr(default=None)

    @field_validator("hooks", mode="before")
    @classmethod
    def _hooks_without_settings(cls, value: Any) -> Any:
        if isinstance(value, dict) and CLAUDE_SETTINGS_KEY in value:
            settings = value[CLAUDE_SETTINGS_KEY]
            if not isinstance(settings, str) or not settings.strip():
                raise _custom(
                    "claude_settings",
                    "hooks.claude_settings must be the path of a Claude Code settings file",
                )
            return {k: v for k, v in value.items() if k != CLAUDE_SETTINGS_KEY}
        return value

    @model_validator(mode="wrap")
    @classmethod
    def _keep_claude_settings(
        cls, data: Any, handler: ModelWrapValidatorHandler[AgentSpec]
    ) -> AgentSpec:
        model = handler(data)
        hooks = data.get("hooks") if isinstance(data, dict) else None
        if isinstance(hooks, dict) and isinstance(hooks.get(CLAUDE_SETTINGS_KEY), str):
            model._claude_settings = hooks[CLAUDE_SETTINGS_KEY]
        return model

    @property
    def claude_settings(self) -> str | None:
        """``hooks.claude_settings``: the Claude Code settings file, as written."""
        return self._claude_settings

    @property
    def module(self) -> str:
        return module_name(self.name)

    @property
    def sandbox_settings(self) -> SandboxSpec:
        """``sandbox:`` as a section: omitted is ``auto``, ``on`` / ``off`` a mode alone."""
        return self.sandbox if self.sandbox is not None else SandboxSpec(mode="auto")

    @property
    def start_model(self) -> str:
        return self.model or next(iter(self.models))
