"""What the ``Output`` model of a typed agent's module is made of (``output.schema``).

A generated module imports only the runtime: its pydantic names come from here. Only a
module with ``output.schema`` imports this (and so pydantic).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, RootModel

__all__ = ["BaseModel", "ConfigDict", "Field", "RootModel"]
