"""Fixtures of the sub-agent tests (defined in kit, next to the helpers)."""

from .kit import server, tree

__all__ = ["server", "tree"]
