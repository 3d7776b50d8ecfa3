"""The object store of checkpoints: file contents and folder listings by their SHA-256.

An object's id is the SHA-256 of its bytes (a folder listing's bytes start with
``TREE_MAGIC``, so a listing never shares an id with a file). It is stored once, at
``objects/<2 hex>/<62 hex>``, zlib-compressed when that saves a tenth or more (first
byte ``z``), else as it is (first byte ``r``). A new object is written to a temporary
file in its folder and renamed into place, so a reader (or a process killed midway)
sees a whole object or none; two processes writing the same object write the same bytes.
Reading checks the bytes against the id: a damaged object is an error, never content.

Objects are not fsynced one by one (a checkpoint of a fresh 10,000-file workspace would
wait for 10,000 flushes): a process killed at any point leaves the store whole, and
after a power loss a checkpoint whose objects did not reach the disk fails its check
when it is read and is refused whole, before any file is touched.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import zlib
from collections.abc import Iterator
from pathlib import Path

from harnessc.runtime.checkpoints.crash import crash_point

__all__ = ["TREE_MAGIC", "DamagedObjectError", "MissingObjectError", "ObjectStore", "object_id"]

TREE_MAGIC = b"harnessc-tree 1\n"
_RAW, _ZLIB = b"r", b"z"
_TMP = ".tmp-"  # prefix of an object being written
_LEVEL = 1  # zlib's fastest level: source files still shrink to about a third


class MissingObjectError(LookupError):
    """An object a checkpoint names is not in the store."""


class DamagedObjectError(ValueError):
    """An object's bytes do not match its id (a damaged or truncated file)."""


def object_id(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class ObjectStore:
    """Objects under ``root`` (``<root>/<2 hex>/<62 hex>``)."""

    __slots__ = ("root", "_known", "written", "written_bytes")

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)
        self._known: set[str] = set()  # ids this process wrote or found present
        self.written = 0  # objects this store object wrote (counted for reports)
        self.written_bytes = 0  # their size on disk

    def path(self, oid: str) -> Path:
        return self.root / oid[:2] / oid[2:]

    def has(self, oid: str) -> bool:
        if oid in self._known:
            return True
        if os.path.exists(self.path(oid)):
            self._known.add(oid)
            return True
        return False

    def put(self, data: bytes, oid: str | None = None) -> str:
        """Store ``data`` (its id may be given when already computed); returns the id."""
        if oid is None:
            oid = object_id(data)
        if self.has(oid):
            return oid
        body = _RAW + data
        if len(data) >= 64:
            packed = zlib.compress(data, _LEVEL)
            if len(packed) * 10 <= len(data) * 9:
                body = _ZLIB + packed
        crash_point(f"take:objects:{self.written + 1}")
        folder = self.root / oid[:2]
        target = folder / oid[2:]
        tmp = folder / f"{_TMP}{os.getpid()}-{oid[2:14]}"
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        except FileNotFoundError:
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            with os.fdopen(fd, "wb") as file:
                file.write(body)
            os.replace(tmp, target)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        self._known.add(oid)
        self.written += 1
        self.written_bytes += len(body)
        return oid

    def get(self, oid: str) -> bytes:
        """The bytes of ``oid``; MissingObjectError, DamagedObjectError."""
        try:
            with open(self.path(oid), "rb") as file:
                body = file.read()
        except FileNotFoundError:
            raise MissingObjectError(f"object {oid[:12]} is missing from {self.root}") from None
        kind, rest = body[:1], body[1:]
        if kind == _ZLIB:
            try:
                data = zlib.decompress(rest)
            except zlib.error:
                raise DamagedObjectError(f"object {oid[:12]} in {self.root} is damaged") from None
        elif kind == _RAW:
            data = rest
        else:
            raise DamagedObjectError(f"object {oid[:12]} in {self.root} is damaged")
        if object_id(data) != oid:
            raise DamagedObjectError(f"object {oid[:12]} in {self.root} is damaged")
        self._known.add(oid)
        return data

    def ids(self) -> Iterator[str]:
        """Every stored object's id (temporary files left out)."""
        try:
            folders = sorted(os.listdir(self.root))
        except FileNotFoundError:
            return
        for folder in folders:
            if len(folder) != 2:
                continue
            try:
                names = os.listdir(self.root / folder)
            except (NotADirectoryError, FileNotFoundError):
                continue
            for name in names:
                if not name.startswith(_TMP) and len(name) == 62:
                    yield folder + name

    def size(self, oid: str) -> int:
        try:
            return os.stat(self.path(oid)).st_size
        except FileNotFoundError:
            return 0

    def delete(self, oid: str) -> int:
        """Remove ``oid``; the bytes it freed (0 when it was not there)."""
        self._known.discard(oid)
        path = self.path(oid)
        try:
            freed = os.stat(path).st_size
            os.unlink(path)
        except FileNotFoundError:
            return 0
        return freed

    def remove_temporary(self) -> int:
        """Remove objects left half-written by a killed process (the caller holds the
        store's exclusive lock: nobody writes); how many were removed."""
        removed = 0
        try:
            folders = os.listdir(self.root)
        except FileNotFoundError:
            return 0
        for folder in folders:
            try:
                names = os.listdir(self.root / folder)
            except (NotADirectoryError, FileNotFoundError):
                continue
            for name in names:
                if name.startswith(_TMP):
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(self.root / folder / name)
                        removed += 1
        return removed

    def forget_known(self) -> None:
        """Drop the ids remembered as present (another process may have collected them)."""
        self._known.clear()
