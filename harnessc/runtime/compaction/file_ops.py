"""The files a summarised part of a session read and changed."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from msgspec import Struct

from harnessc.runtime.core.messages import AssistantMessage, Message

__all__ = ["FileOperations"]


class FileOperations(Struct):
    """Files the summarised part read and changed (from read/write/edit tool calls)."""

    read: set[str] = set()
    written: set[str] = set()
    edited: set[str] = set()

    def add_messages(self, messages: Iterable[Message]) -> None:
        for message in messages:
            if not isinstance(message, AssistantMessage):
                continue
            for call in message.tool_calls:
                path = call.arguments.get("path") if isinstance(call.arguments, dict) else None
                if not isinstance(path, str) or not path:
                    continue
                if call.name == "read":
                    self.read.add(path)
                elif call.name == "write":
                    self.written.add(path)
                elif call.name == "edit":
                    self.edited.add(path)

    def add_details(self, details: Any) -> None:
        """Carry over the lists of an earlier compaction's ``details``."""
        if not isinstance(details, Mapping):
            return
        for key, target in (("readFiles", self.read), ("modifiedFiles", self.edited)):
            values = details.get(key)
            if isinstance(values, list):
                target.update(v for v in values if isinstance(v, str))

    def modified_files(self) -> list[str]:
        return sorted(self.written | self.edited)

    def read_files(self) -> list[str]:
        """Files only read (a file also modified is listed as modified)."""
        return sorted(self.read - self.written - self.edited)

    def details(self) -> dict[str, list[str]]:
        return {"readFiles": self.read_files(), "modifiedFiles": self.modified_files()}

    def format(self) -> str:
        """The lists appended to a summary (empty when no file was touched)."""
        parts = []
        if read := self.read_files():
            parts.append("<read-files>\n" + "\n".join(read) + "\n</read-files>")
        if modified := self.modified_files():
            parts.append("<modified-files>\n" + "\n".join(modified) + "\n</modified-files>")
        return "\n\n".join(parts)
