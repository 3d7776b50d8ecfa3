"""Folder listings (trees) of a checkpoint, and the differences between two of them.

A tree lists one folder, its entries sorted by name: for each, its kind (``f`` a file,
``l`` a symbolic link, ``d`` a folder), its permission bits, its size and the id of its
object (a file's content, a link's target, a folder's own tree), then its name. A
folder that did not change keeps its tree id, so a checkpoint after a small change
stores the changed files and the trees on their paths, nothing else; two trees are
compared folder by folder, skipping every folder whose id is the same on both sides.

Names are bytes on disk; paths here are ``str`` with ``surrogateescape`` for names that
are not UTF-8 (``os.fsdecode``), joined with ``/``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

from msgspec import Struct

from harnessc.runtime.checkpoints.objects import TREE_MAGIC, ObjectStore, object_id

__all__ = [
    "DIR",
    "FILE",
    "LINK",
    "Node",
    "changed_paths",
    "decode_tree",
    "encode_tree",
    "flatten",
]

FILE, LINK, DIR = "f", "l", "d"


class Node(Struct, frozen=True):
    """One entry of a tree: kind, permission bits, size (bytes; 0 for a folder) and the
    id of its object."""

    kind: str
    mode: int
    size: int
    oid: str


def encode_tree(entries: list[tuple[bytes, Node]]) -> bytes:
    """The bytes of a tree (``entries`` sorted by name)."""
    parts = [TREE_MAGIC]
    for name, node in entries:
        parts.append(
            b"%s %o %d %s\t%s\0"
            % (node.kind.encode(), node.mode, node.size, node.oid.encode(), name)
        )
    return b"".join(parts)


def tree_id(data: bytes) -> str:
    return object_id(data)


def decode_tree(data: bytes) -> list[tuple[bytes, Node]]:
    if not data.startswith(TREE_MAGIC):
        raise ValueError("not a checkpoint tree")
    out: list[tuple[bytes, Node]] = []
    body = data[len(TREE_MAGIC) :]
    for record in body.split(b"\0"):
        if not record:
            continue
        head, _, name = record.partition(b"\t")
        kind, mode, size, oid = head.split(b" ")
        out.append((name, Node(kind.decode(), int(mode, 8), int(size), oid.decode())))
    return out


class TreeReader:
    """Trees read from a store, each decoded once."""

    __slots__ = ("store", "_cache")

    def __init__(self, store: ObjectStore) -> None:
        self.store = store
        self._cache: dict[str, dict[str, Node]] = {}

    def read(self, oid: str) -> dict[str, Node]:
        """The entries of tree ``oid`` by name (``str``)."""
        found = self._cache.get(oid)
        if found is None:
            found = {os.fsdecode(name): node for name, node in decode_tree(self.store.get(oid))}
            self._cache[oid] = found
        return found


def flatten(reader: TreeReader, oid: str, prefix: str = "") -> dict[str, Node]:
    """Every path below tree ``oid`` (folders included) and its node."""
    out: dict[str, Node] = {}
    stack = [(oid, prefix)]
    while stack:
        current, base = stack.pop()
        for name, node in reader.read(current).items():
            path = base + name
            out[path] = node
            if node.kind == DIR:
                stack.append((node.oid, path + "/"))
    return out


def changed_paths(
    reader: TreeReader, old: str | None, new: str | None
) -> Iterator[tuple[str, Node | None, Node | None]]:
    """``(path, old node, new node)`` for every path that differs between two trees
    (None: no tree, or the path is absent on that side). Folders whose tree ids are
    equal are skipped whole; a folder present on both sides is listed only when its
    permission bits differ."""
    if old == new:
        return
    stack: list[tuple[str | None, str | None, str]] = [(old, new, "")]
    while stack:
        a_id, b_id, base = stack.pop()
        a = reader.read(a_id) if a_id is not None else {}
        b = reader.read(b_id) if b_id is not None else {}
        for name in sorted(a.keys() | b.keys()):
            x, y = a.get(name), b.get(name)
            if x == y:
                continue
            path = base + name
            x_dir = x is not None and x.kind == DIR
            y_dir = y is not None and y.kind == DIR
            if x_dir and y_dir:
                assert x is not None and y is not None
                if x.mode != y.mode:
                    yield path, x, y
                if x.oid != y.oid:
                    stack.append((x.oid, y.oid, path + "/"))
                continue
            yield path, x, y
            if x_dir:
                assert x is not None
                stack.append((x.oid, None, path + "/"))
            if y_dir:
                assert y is not None
                stack.append((None, y.oid, path + "/"))
