"""The typed result of a run (``output:`` in the spec): its schema, how the model is asked
for it, and how an answer is validated.

A result is given as a JSON Schema (checked with the runtime's JSON Schema validator,
``validation.py``) or as a Python type (a pydantic model, dataclass or TypedDict, checked
by pydantic, which is imported only here and only when a type is used). The model
answers in one of four modes, as pydantic-ai names them:

- ``tool``: a ``final_result`` tool whose arguments are the answer;
- ``native``: the provider's own structured output (a JSON Schema the reply must match);
- ``prompted``: the schema is put in the instructions and the reply text is parsed;
- ``auto``: native where the model declares ``structured_output``, else tool.

A schema whose top level is not an object is wrapped as ``{"result": ...}`` wherever the
wire needs an object (tool arguments); the value handed back is unwrapped.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any, Literal

from msgspec import Struct

if TYPE_CHECKING:
    from harnessc.runtime.core.model_options import Model
    from harnessc.runtime.tools.base import Tool, ToolResult

__all__ = [
    "OUTPUT_INVALID",
    "OUTPUT_TOOL",
    "OutputConfig",
    "OutputMode",
    "extract_json",
    "output_tool",
]

OutputMode = Literal["auto", "native", "tool", "prompted"]

# The name of the final-result tool (a spec tool may not take it).
OUTPUT_TOOL = "final_result"
# The finish reason of a run whose answer never validated (exit code 1).
OUTPUT_INVALID = "output_invalid"
_WRAP_KEY = "result"
_FENCE = re.compile(r"```(?:json)?\s*\n?(.*?)```", re.DOTALL)


class OutputConfig(Struct, dict=True):
    """What the answer of a run must be (``AgentHarnessOptions.output``).

    ``schema``: a JSON Schema; or ``type``: a Python type validated by pydantic (the
    schema sent to the model is then pydantic's JSON Schema of it). ``retries``: invalid
    answers sent back to the model before the run ends with ``output_invalid``. The
    pydantic adapter and its schema are cached beside the fields (``dict=True``), out of
    equality and repr.
    """

    schema: dict[str, Any] | None = None
    type: Any = None
    retries: int = 2
    mode: OutputMode = "auto"
    name: str = "result"

    def __post_init__(self) -> None:
        if (self.schema is None) == (self.type is None):
            raise ValueError("an output needs exactly one of schema and type")
        if self.mode not in ("auto", "native", "tool", "prompted"):
            raise ValueError(f"unknown output mode {self.mode!r}")

    # -- the schema --------------------------------------------------------------------

    def _type_adapter(self) -> Any:
        adapter = self.__dict__.get("_adapter")
        if adapter is None:
            from pydantic import TypeAdapter  # only agents with a typed output pay for it

            adapter = self.__dict__["_adapter"] = TypeAdapter(self.type)
        return adapter

    def json_schema(self) -> dict[str, Any]:
        """The JSON Schema of the answer."""
        if self.schema is not None:
            return self.schema
        schema = self.__dict__.get("_schema")
        if schema is None:
            schema = self.__dict__["_schema"] = self._type_adapter().json_schema()
        return schema

    @property
    def wrapped(self) -> bool:
        """The schema is not an object: the answer travels as ``{"result": value}``."""
        schema = self.json_schema()
        return schema.get("type") != "object" and "properties" not in schema

    def object_schema(self) -> dict[str, Any]:
        """The schema as an object (the final_result tool's parameters)."""
        schema = self.json_schema()
        if not self.wrapped:
            return schema
        return {"type": "object", "properties": {_WRAP_KEY: schema}, "required": [_WRAP_KEY]}

    def resolved_mode(self, model: Model) -> Literal["native", "tool", "prompted"]:
        """The mode used with ``model`` (``auto``: native when it declares structured output)."""
        if self.mode == "auto":
            return "native" if getattr(model, "structured_output", False) else "tool"
        return self.mode

    def instructions(self) -> str:
        """The system-prompt addition of the prompted mode."""
        schema = json.dumps(self.object_schema(), ensure_ascii=False, indent=2)
        return (
            "Always end with your final answer as one JSON object matching this JSON "
            f"Schema, and nothing else in that reply (no prose, no code fence):\n{schema}"
        )

    # -- validation --------------------------------------------------------------------

    def validate(self, value: Any) -> tuple[Any, list[str]]:
        """Check an answer given as the final_result arguments (or the parsed reply
        text, wrapped like them): (the validated value, errors named by field)."""
        if self.wrapped:
            if not isinstance(value, dict) or _WRAP_KEY not in value:
                return None, [f"{_WRAP_KEY}: required property is missing"]
            value = value[_WRAP_KEY]
        if self.type is not None:
            return self._validate_type(value)
        from harnessc.runtime.tools.validation import validate_arguments

        if self.wrapped:
            checked, errors = validate_arguments({_WRAP_KEY: value}, self.object_schema())
            return checked.get(_WRAP_KEY, value), errors
        return validate_arguments(value, self.json_schema())

    def _validate_type(self, value: Any) -> tuple[Any, list[str]]:
        from pydantic import ValidationError

        try:
            return self._type_adapter().validate_python(value), []
        except ValidationError as exc:
            errors = []
            for error in exc.errors(include_url=False):
                where = ".".join(str(part) for part in error.get("loc", ())) or "answer"
                errors.append(f"{where}: {error.get('msg', 'invalid')}")
            return None, errors

    def parse_text(self, text: str) -> tuple[Any, list[str]]:
        """A reply text as an answer (native and prompted modes)."""
        try:
            value = extract_json(text)
        except ValueError as exc:
            return None, [f"the reply is not JSON: {exc}"]
        return self.validate({_WRAP_KEY: value} if self.wrapped else value)

    def to_json(self, value: Any) -> Any:
        """A validated value as plain JSON (pydantic models and dataclasses dumped)."""
        if self.type is None:
            return value
        return self._type_adapter().dump_python(value, mode="json")

    def retry_text(self, errors: list[str], *, tool_mode: bool) -> str:
        """What the model is told after an invalid answer."""
        lines = "\n".join(f"- {error}" for error in errors)
        again = f"Call {OUTPUT_TOOL} again" if tool_mode else "Answer again with the JSON only"
        return f"The answer does not validate:\n{lines}\n{again}, with these fixed."


def extract_json(text: str) -> Any:
    """The JSON value of a reply: the whole text, a fenced block, or the outermost
    ``{...}`` / ``[...]`` in it. Raises ValueError when none parses."""
    stripped = text.strip()
    candidates = [stripped]
    candidates.extend(match.strip() for match in _FENCE.findall(stripped))
    for opener, closer in (("{", "}"), ("[", "]")):
        start, end = stripped.find(opener), stripped.rfind(closer)
        if 0 <= start < end:
            candidates.append(stripped[start : end + 1])
    error = "empty reply"
    for candidate in candidates:
        if not candidate:
            continue
        try:
            return json.loads(candidate)
        except ValueError as exc:
            error = str(exc)
    raise ValueError(error)


def output_tool(config: OutputConfig) -> Tool:
    """The final_result tool: its arguments are the answer; a valid one ends the run."""
    from harnessc.runtime.core.messages import TextContent
    from harnessc.runtime.tools.base import Tool, ToolResult

    async def run(
        tool_call_id: str, params: dict[str, Any], signal: Any, on_update: Any, context: Any
    ) -> ToolResult:
        _, errors = config.validate(params)
        if errors:
            return ToolResult(
                [TextContent(config.retry_text(errors, tool_mode=True))], is_error=True
            )
        return ToolResult([TextContent("Final result accepted.")], terminate=True)

    return Tool(
        name=OUTPUT_TOOL,
        description="Give the final answer of the task. Call it once, when you are done.",
        parameters=config.object_schema(),
        run=run,
        label="final result",
        execution_mode="sequential",
    )
