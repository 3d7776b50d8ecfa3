"""The turn's part of a typed result (``AgentHarnessOptions.output``).

``shape`` asks the model for the answer in the mode the current model gets (the
final_result tool, the provider's structured output, or the schema in the system
prompt); ``judge`` looks at a reply when the run would stop (or when final_result was
called): a valid answer ends the run with its value, an invalid one goes back to the
model with the errors (``RunState.output_retries`` counts them, so a resumed run goes
on counting), and past ``retries`` the run ends with reason ``output_invalid``.
"""

from __future__ import annotations

from typing import Any

from msgspec import Struct

from harnessc.runtime.agent.parts import AgentParts
from harnessc.runtime.agent.run_state import RunState
from harnessc.runtime.core.events import ErrorEvent
from harnessc.runtime.core.messages import TextContent, UserMessage
from harnessc.runtime.core.model_options import Model
from harnessc.runtime.options.typed_output import OUTPUT_INVALID, OUTPUT_TOOL, OutputConfig
from harnessc.runtime.providers.base import Context, ResponseSchema

__all__ = ["Verdict", "answering_model", "judge", "shape"]


class Verdict(Struct, frozen=True):
    """What the reply means for the run: ``retry`` (ask again), or the run ends (``ok``
    with ``value``, else ``output_invalid`` with ``errors``)."""

    retry: bool = False
    ok: bool = False
    value: Any = None
    errors: tuple[str, ...] = ()
    reason: str = ""


def shape(agent: AgentParts, context: Context) -> None:
    """Ask for the answer in the request about to be sent to the current model (edits
    ``context``); a request shaped for another model first loses that model's shape, so
    a request moved to a fallback model asks in the fallback's own mode."""
    config = agent.options.output
    if config is None:
        return
    _unshape(config, context)
    mode = config.resolved_mode(agent.settings.model)
    if mode == "native":
        schema = config.object_schema()
        context.response_schema = ResponseSchema(
            name=config.name, schema=schema, strict=strict_allowed(schema)
        )
    elif mode == "prompted":
        context.system_prompt = f"{context.system_prompt}\n\n{config.instructions()}".strip()
    else:
        tool = agent.settings.output_tool
        if tool is None:
            return
        if not any(spec.name == OUTPUT_TOOL for spec in context.tools):
            from harnessc.runtime.providers.base import ToolSpec

            context.tools.append(ToolSpec(tool.name, tool.description, tool.parameters))
        # the answer must come as a tool call: final_result itself when it is the only tool
        context.tool_choice = OUTPUT_TOOL if len(context.tools) == 1 else "required"


def _unshape(config: OutputConfig, context: Context) -> None:
    """Take out what ``shape`` put in (the request of another model)."""
    context.response_schema = None
    if any(spec.name == OUTPUT_TOOL for spec in context.tools):
        context.tools = [spec for spec in context.tools if spec.name != OUTPUT_TOOL]
        context.tool_choice = None
    added = config.instructions()
    if context.system_prompt == added:
        context.system_prompt = ""
    else:
        context.system_prompt = context.system_prompt.removesuffix(f"\n\n{added}")


def answering_model(agent: AgentParts, run: RunState) -> Model:
    """The model that wrote the reply just handled (with model fallback, not
    necessarily the chosen one); the current model when the reply names none of them."""
    current = agent.settings.model
    reply = run.reply
    if reply is None or (reply.model == current.id and reply.api == current.api):
        return current
    for model in agent.settings.models.values():
        if model.id == reply.model and model.api == reply.api:
            return model
    return current


async def judge(agent: AgentParts, run: RunState) -> Verdict | None:
    """The verdict on the reply just handled, or None when the run goes on as usual
    (the model called other tools and gave no answer yet)."""
    config = agent.options.output
    if config is None:
        return None
    answers = [r for r in run.calls if r.call.name == OUTPUT_TOOL and r.result is not None]
    if answers:
        record = answers[-1]
        value, errors = config.validate(record.args or record.call.arguments)
        result = record.result
        assert result is not None
        if not errors and not result.is_error:
            return Verdict(ok=True, value=value, reason="final_result")
        if not errors:  # a hook refused the call: no answer was given
            refused = " ".join(c.text for c in result.content if isinstance(c, TextContent))
            errors = [f"the {OUTPUT_TOOL} call was refused: {refused or 'no reason given'}"]
        return await _invalid(agent, run, config, errors, tool_mode=True, told=True)
    if run.calls:
        return None
    reply = run.reply
    mode = config.resolved_mode(answering_model(agent, run))
    if mode == "tool":
        errors = [f"no answer: call the {OUTPUT_TOOL} tool with the answer"]
        return await _invalid(agent, run, config, errors, tool_mode=True, told=False)
    value, errors = config.parse_text(reply.text if reply is not None else "")
    if not errors:
        return Verdict(ok=True, value=value, reason="goal_met")
    return await _invalid(agent, run, config, errors, tool_mode=False, told=False)


async def _invalid(
    agent: AgentParts,
    run: RunState,
    config: OutputConfig,
    errors: list[str],
    *,
    tool_mode: bool,
    told: bool,
) -> Verdict:
    """Another try (the errors sent to the model) or, past ``retries``, the end."""
    if run.output_retries >= config.retries:
        message = "the answer did not validate: " + "; ".join(errors)
        await agent.bus.emit(ErrorEvent(source="output", message=message, fatal=True))
        return Verdict(errors=tuple(errors), reason=OUTPUT_INVALID)
    run.output_retries += 1
    if not told:  # a final_result call already carries the errors in its result
        text = config.retry_text(errors, tool_mode=tool_mode)
        await agent.append(UserMessage([TextContent(text)]))
    return Verdict(retry=True, errors=tuple(errors))


def strict_allowed(schema: Any) -> bool:
    """OpenAI's strict mode takes the schema as it is: every object closed
    (``additionalProperties: false``) with every property required."""
    if isinstance(schema, list):
        return all(strict_allowed(item) for item in schema)
    if not isinstance(schema, dict):
        return True
    properties = schema.get("properties")
    if schema.get("type") == "object" or isinstance(properties, dict):
        if schema.get("additionalProperties") is not False:
            return False
        if isinstance(properties, dict) and set(schema.get("required") or []) != set(properties):
            return False
    return all(strict_allowed(value) for value in schema.values() if isinstance(value, dict | list))
