"""Asking the model for a summary (one request, no tools, thinking off)."""

from __future__ import annotations

from typing import Any

from msgspec import Struct
from msgspec.structs import replace

from harnessc.runtime.compaction.cut_point import CompactionPreparation
from harnessc.runtime.compaction.prompts import (
    SUMMARY_SYSTEM_PROMPT,
    build_summary_prompt,
    build_turn_prefix_prompt,
)
from harnessc.runtime.compaction.trigger import CompactionError
from harnessc.runtime.core.messages import AssistantMessage, TextContent, UserMessage
from harnessc.runtime.core.options import AgentHarnessStreamOptions, Model, ThinkingLevel
from harnessc.runtime.core.signal import AbortSignal
from harnessc.runtime.providers.base import Context, Provider, ProviderRequest
from harnessc.runtime.session.session import SessionEntry

__all__ = ["CompactionResult", "complete_summary", "generate_summary"]


async def complete_summary(
    model: Model,
    provider: Provider,
    system_prompt: str,
    prompt: str,
    max_tokens: int,
    signal: AbortSignal | None,
    stream_options: AgentHarnessStreamOptions | None,
    session_id: str | None,
) -> str:
    request = ProviderRequest(
        model=replace(model, max_tokens=max(256, min(model.max_tokens, max_tokens))),
        context=Context(
            system_prompt=system_prompt,
            messages=[UserMessage(content=[TextContent(prompt)])],
        ),
        stream_options=stream_options or AgentHarnessStreamOptions(),
        thinking_level=ThinkingLevel.OFF,
        signal=signal or AbortSignal(),
        session_id=session_id,
    )
    final: AssistantMessage | None = None
    async for event in provider.stream(request):
        if event.type in ("done", "error"):
            final = event.partial
    if final is None:
        raise CompactionError("the provider ended without a reply")
    if final.stop_reason in ("error", "aborted"):
        raise CompactionError(f"summary request failed: {final.error_message or final.stop_reason}")
    text = final.text.strip()
    if not text:
        raise CompactionError("the model returned an empty summary")
    return text


class CompactionResult(Struct):
    summary: str
    first_kept_entry_id: str
    tokens_before: int
    details: dict[str, Any] | None = None
    entry: SessionEntry | None = None  # the appended compaction entry
    from_hook: bool = False


async def generate_summary(
    preparation: CompactionPreparation,
    model: Model,
    provider: Provider,
    *,
    custom_instructions: str | None = None,
    signal: AbortSignal | None = None,
    stream_options: AgentHarnessStreamOptions | None = None,
    session_id: str | None = None,
) -> CompactionResult:
    """Ask the model for the summary of a prepared compaction (nothing is appended)."""
    reserve = preparation.settings.reserve_tokens
    history: str | None = None
    if preparation.messages_to_summarize:
        history = await complete_summary(
            model,
            provider,
            SUMMARY_SYSTEM_PROMPT,
            build_summary_prompt(
                preparation.messages_to_summarize,
                preparation.previous_summary,
                custom_instructions,
            ),
            int(reserve * 0.8),
            signal,
            stream_options,
            session_id,
        )
    elif preparation.previous_summary:
        history = preparation.previous_summary
    summary = history or ""
    if preparation.is_split_turn and preparation.turn_prefix_messages:
        prefix = await complete_summary(
            model,
            provider,
            SUMMARY_SYSTEM_PROMPT,
            build_turn_prefix_prompt(preparation.turn_prefix_messages),
            int(reserve * 0.5),
            signal,
            stream_options,
            session_id,
        )
        turn = f"**Turn context (the start of the current turn, summarised):**\n\n{prefix}"
        summary = f"{summary}\n\n---\n\n{turn}" if summary else turn
    files = preparation.file_ops.format()
    if files:
        summary = f"{summary}\n\n{files}"
    return CompactionResult(
        summary=summary,
        first_kept_entry_id=preparation.first_kept_entry_id,
        tokens_before=preparation.tokens_before,
        details=preparation.file_ops.details(),
    )
