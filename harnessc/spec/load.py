"""Read a spec file: YAML with positions -> strict model validation -> checks."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from harnessc.spec.checks import check_spec
from harnessc.spec.diagnostics import Diagnostic, has_errors
from harnessc.spec.errors import translate_errors
from harnessc.spec.models import AgentSpec
from harnessc.spec.yamlsource import MAX_BYTES, YamlSource, load_yaml

__all__ = ["LoadedSpec", "load_spec", "parse_spec"]


@dataclass(slots=True)
class LoadedSpec:
    """A spec file and what became of it; ``spec`` is None when it has errors."""

    path: Path  # absolute
    display_path: str
    raw: bytes
    spec: AgentSpec | None = None
    diagnostics: list[Diagnostic] = field(default_factory=list)
    source: YamlSource | None = None  # the data with the position of every key and value

    @property
    def ok(self) -> bool:
        return self.spec is not None and not has_errors(self.diagnostics)

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.raw).hexdigest()


def parse_spec(
    raw: bytes, path: str | os.PathLike[str], display_path: str | None = None
) -> LoadedSpec:
    """Validate spec bytes as if read from ``path`` (relative paths resolve beside it)."""
    abs_path = Path(os.path.abspath(path))
    shown = display_path if display_path is not None else str(path)
    loaded = LoadedSpec(abs_path, shown, raw)
    source = load_yaml(raw, shown)
    loaded.source = source
    loaded.diagnostics.extend(source.diagnostics)
    if source.diagnostics and source.data is None:
        return loaded
    if source.data is None:
        loaded.diagnostics.append(
            Diagnostic(shown, 1, 1, "error", "the spec is empty; it needs version, name and models")
        )
        return loaded
    spec = _validate(source, loaded.diagnostics)
    loaded.diagnostics.extend(check_spec(source, abs_path.parent))
    if not has_errors(loaded.diagnostics):
        loaded.spec = spec
    return loaded


def _validate(source: YamlSource, out: list[Diagnostic]) -> AgentSpec | None:
    context: dict[str, Any] = {}
    try:
        return AgentSpec.model_validate(source.data, context=context)
    except ValidationError as exc:
        out.extend(translate_errors(exc, source, context))
        return None


def load_spec(path: str | os.PathLike[str], display_path: str | None = None) -> LoadedSpec:
    """Read and validate one spec file; problems are diagnostics, never exceptions."""
    shown = display_path if display_path is not None else str(path)
    try:
        with open(path, "rb") as handle:
            raw = handle.read(MAX_BYTES + 1)
    except OSError as exc:
        loaded = LoadedSpec(Path(os.path.abspath(path)), shown, b"")
        reason = exc.strerror or str(exc)
        loaded.diagnostics.append(
            Diagnostic(shown, 1, 1, "error", f"cannot read the spec: {reason}")
        )
        return loaded
    return parse_spec(raw, path, shown)
