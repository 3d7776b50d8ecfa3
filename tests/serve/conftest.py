"""Fixtures of the serve tests (defined in servekit.py)."""

from .servekit import kit, model_server, server

__all__ = ["kit", "model_server", "server"]
