"""CLI test fixtures (defined in clikit, next to the helpers the tests import)."""

from .clikit import agent, server, terminals

__all__ = ["agent", "server", "terminals"]
