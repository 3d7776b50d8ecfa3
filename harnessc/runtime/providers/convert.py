"""Harness history -> a message list every wire API accepts.

Shared by the providers before they map messages to their own JSON: failed or aborted
replies are left out, every tool call gets exactly one result right after its reply,
results without a call are dropped, custom messages become user messages.

``EncodedMessages`` keeps each message's encoded wire form between the requests of
one provider, so a long session's request encodes only what is new: an entry is used
only while its message is the same object with the same content (``message_shape``),
so a message a hook changed, a compacted context or another branch is encoded again.
Providers keep them for contexts of ``KEEP_FROM`` messages or more.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, Generic, TypeAlias, TypeVar

from harnessc.runtime.core.messages import (
    AssistantMessage,
    CustomMessage,
    ImageContent,
    Message,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserContent,
    UserMessage,
)
from harnessc.runtime.providers.text import payload_bytes

__all__ = [
    "NO_RESULT_TEXT",
    "EncodedMessages",
    "EncodedTurns",
    "KEEP_FROM",
    "WireMessage",
    "has_images",
    "image_placeholder",
    "merged_turns",
    "message_shape",
    "turn_list",
    "turns_json",
    "user_parts",
    "wire_messages",
    "wire_sequence",
]

NO_RESULT_TEXT = "No result provided"

# The shortest context whose encodings are kept between requests: a shorter one costs
# little to encode whole each time, and a thousand short sessions keep no second copy
# of their messages.
KEEP_FROM = 24

_NO_CALLS: list[ToolCall] = []  # shared by the entries of messages without calls (read only)

# What ``wire_sequence`` yields (a custom message goes as user content).
WireMessage: TypeAlias = UserMessage | AssistantMessage | ToolResultMessage | CustomMessage


def image_placeholder() -> TextContent:
    return TextContent("(image omitted: this model does not accept images)")


def _synthetic(call: ToolCall) -> ToolResultMessage:
    return ToolResultMessage(
        tool_call_id=call.id,
        tool_name=call.name,
        content=[TextContent(NO_RESULT_TEXT)],
        is_error=True,
    )


def wire_sequence(
    messages: list[Message],
) -> Iterator[WireMessage]:
    """The messages to send, in order, consistent about tool calls and results; a
    custom message is yielded as it is (it goes as user content)."""
    # Calls of the last reply still without a result (a list: a model may repeat an id).
    pending: list[ToolCall] = []
    for message in messages:
        if isinstance(message, ToolResultMessage):
            for position, call in enumerate(pending):
                if call.id == message.tool_call_id:
                    del pending[position]
                    yield message
                    break
            continue
        if pending:
            for call in pending:
                yield _synthetic(call)
            pending.clear()
        if isinstance(message, AssistantMessage):
            if message.stop_reason in ("error", "aborted") or not message.content:
                continue
            yield message
            pending.extend(c for c in message.content if isinstance(c, ToolCall))
        elif isinstance(message, UserMessage | CustomMessage):
            yield message
    for call in pending:
        yield _synthetic(call)


def wire_messages(
    messages: list[Message],
) -> list[UserMessage | AssistantMessage | ToolResultMessage]:
    """The messages to send, in order, consistent about tool calls and results."""
    out: list[UserMessage | AssistantMessage | ToolResultMessage] = []
    for message in wire_sequence(messages):
        if isinstance(message, CustomMessage):
            out.append(UserMessage(content=message.content, timestamp=message.timestamp))
        else:
            out.append(message)
    return out


def _copied(value: Any) -> Any:
    """A deep copy of a JSON value (dicts and lists copied, the rest shared)."""
    if type(value) is dict:
        return {k: _copied(v) for k, v in value.items()}
    if type(value) is list:
        return [_copied(v) for v in value]
    if isinstance(value, dict | list | tuple | set):
        return copy.deepcopy(value)
    return value


def _block_shape(block: Any, snapshot: bool) -> Any:
    if type(block) is TextContent and block.text_signature is None:
        return block.text
    if isinstance(block, ToolCall):
        # The arguments are a mutable dict: the kept shape holds a copy to compare with.
        arguments = _copied(block.arguments) if snapshot else block.arguments
        return (block.id, block.name, arguments, block.parse_error)
    if isinstance(block, ThinkingContent):
        return (block.thinking, block.thinking_signature, block.redacted)
    if isinstance(block, ImageContent):
        return (block.mime_type, block.data)
    if isinstance(block, TextContent):
        return (block.text, block.text_signature)
    return block


def message_shape(message: Message, snapshot: bool = False) -> tuple[Any, ...]:
    """What a message's wire form is made of: equal shapes (of one message object),
    equal wire forms.

    Strings are compared by identity first, so an unchanged message costs a few
    pointer comparisons; ``snapshot`` copies what could change in place (tool-call
    arguments) for the shape that is kept.
    """
    content: Any = message.content
    if type(content) is str:
        blocks: Any = content
    elif len(content) == 1 and type(content[0]) is TextContent:
        blocks = (_block_shape(content[0], snapshot),)
    else:
        blocks = tuple([_block_shape(b, snapshot) for b in content])
    if isinstance(message, AssistantMessage):
        return (message.stop_reason, message.api, blocks)
    if isinstance(message, ToolResultMessage):
        return (message.tool_call_id, message.tool_name, message.is_error, blocks)
    return (blocks,)


W = TypeVar("W")
B = TypeVar("B")


class EncodedMessages(Generic[W]):
    """Each message's encoded wire form (any value ``W``), kept between requests.

    A form is used only for the same message object with the same shape; the entries
    a request did not use are dropped once they outnumber the used ones (a compaction
    or a branch switch left them behind). ``reset`` forgets everything (another model,
    whose forms differ).
    """

    __slots__ = ("_entries", "variant")

    def __init__(self) -> None:
        # id(message) -> (message, its shape, its form, its tool calls)
        self._entries: dict[int, tuple[Message, tuple[Any, ...], W, list[ToolCall]]] = {}
        self.variant: Any = None  # what the forms depend on besides the messages

    def forms(
        self, messages: list[Message], encode: Callable[[WireMessage], W], variant: Any
    ) -> list[W]:
        """The forms of ``wire_sequence(messages)``, in order: each kept one whose message
        is unchanged, else ``encode(message)`` (kept for the next request). ``variant``:
        what the forms depend on besides the messages (a change forgets every kept form).

        The same walk as ``wire_sequence``, with each reply's calls taken once per
        message, so an unchanged message costs a lookup and a shape.
        """
        if variant != self.variant:
            self.reset(variant)
        entries = self._entries
        out: list[W] = []
        used: list[int] = []
        pending: list[ToolCall] = []
        for message in messages:
            if isinstance(message, ToolResultMessage):
                if not pending:
                    continue
                for position, call in enumerate(pending):
                    if call.id == message.tool_call_id:
                        del pending[position]
                        break
                else:
                    continue
            else:
                if pending:
                    out.extend([encode(_synthetic(call)) for call in pending])
                    pending.clear()
                if isinstance(message, AssistantMessage):
                    if message.stop_reason in ("error", "aborted") or not message.content:
                        continue
                elif not isinstance(message, UserMessage | CustomMessage):
                    continue
            key = id(message)
            entry = entries.get(key)
            if entry is None or entry[0] is not message or entry[1] != message_shape(message):
                calls = _NO_CALLS
                if isinstance(message, AssistantMessage):
                    calls = [c for c in message.content if isinstance(c, ToolCall)] or _NO_CALLS
                entry = (message, message_shape(message, snapshot=True), encode(message), calls)
                entries[key] = entry
            used.append(key)
            out.append(entry[2])
            if entry[3]:
                pending.extend(entry[3])
        if pending:
            out.extend([encode(_synthetic(call)) for call in pending])
        if len(entries) > 2 * len(used) + 16:  # stale entries outnumber the used ones
            self._entries = {key: entries[key] for key in used}
        return out

    def reset(self, variant: Any) -> None:
        self._entries = {}
        self.variant = variant

    def __len__(self) -> int:
        return len(self._entries)


def merged_turns(forms: Iterable[tuple[str, Sequence[B]]]) -> list[tuple[str, list[B]]]:
    """Messages as ``(role, blocks)`` -> turns, consecutive same-role messages merged
    and empty ones left out (the APIs that want one turn per role in a row: Anthropic,
    Gemini)."""
    turns: list[tuple[str, list[B]]] = []
    for role, blocks in forms:
        if not blocks:
            continue
        if turns and turns[-1][0] == role:
            turns[-1][1].extend(blocks)
        else:
            turns.append((role, list(blocks)))
    return turns


def turn_list(forms: Iterable[tuple[str, Sequence[B]]], key: str) -> list[dict[str, Any]]:
    """``[{"role": role, key: blocks}, ...]`` of ``merged_turns(forms)``."""
    return [{"role": role, key: blocks} for role, blocks in merged_turns(forms)]


class EncodedTurns:
    """The encoded turns of one provider's requests (the APIs of ``merged_turns``):
    each history message's role and blocks, each block UTF-8 JSON, encoded once
    (``EncodedMessages``: again only when it changed), then merged into turns."""

    __slots__ = ("messages",)

    def __init__(self) -> None:
        self.messages: EncodedMessages[tuple[str, tuple[bytes, ...]]] = EncodedMessages()

    def turns(
        self,
        messages: list[Message],
        message: Callable[[WireMessage], tuple[str, list[Any]]],
        variant: Any,
    ) -> list[tuple[str, list[bytes]]]:
        """The turns of ``messages``, ``message`` giving a message's role and blocks;
        ``variant``: what the blocks depend on besides the messages."""

        def encode(wire_message: WireMessage) -> tuple[str, tuple[bytes, ...]]:
            role, blocks = message(wire_message)
            return role, tuple(payload_bytes(block) for block in blocks)

        return merged_turns(self.messages.forms(messages, encode, variant))


def turns_json(turns: list[tuple[str, list[bytes]]], key: str) -> bytes:
    """``[{"role": role, key: [blocks...]}, ...]`` as ``json.dumps`` writes it."""
    field = b'", "' + key.encode() + b'": ['
    return (
        b"["
        + b", ".join(
            b'{"role": "' + role.encode() + field + b", ".join(blocks) + b"]}"
            for role, blocks in turns
        )
        + b"]"
    )


def user_parts(content: str | list[UserContent]) -> list[UserContent]:
    """User content as a list of blocks."""
    if isinstance(content, str):
        return [TextContent(content)]
    return list(content)


def has_images(content: str | list[UserContent]) -> bool:
    return not isinstance(content, str) and any(isinstance(c, ImageContent) for c in content)
