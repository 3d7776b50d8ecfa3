"""Read a spec file: YAML with positions -> strict model validation -> checks."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from harnessc.spec.checks import check_spec, tool_names
from harnessc.spec.diagnostics import Diagnostic, has_errors
from harnessc.spec.errors import translate_errors
from harnessc.spec.models import AgentSpec, SubAgentBudgetSpec
from harnessc.spec.sandbox import subagent_widening
from harnessc.spec.subagents import (
    DEFAULT_MAX_DEPTH,
    ClaudeAgentFile,
    agent_entries,
    read_claude_agent,
)
from harnessc.spec.yamlsource import MAX_BYTES, YamlSource, load_yaml

__all__ = ["LoadedSpec", "SubAgentRef", "load_spec", "parse_spec"]


@dataclass(slots=True)
class SubAgentRef:
    """A sub-agent of a loaded spec: another spec (``loaded``) or a Claude Code file."""

    name: str
    description: str
    loaded: LoadedSpec | None = None
    claude: ClaudeAgentFile | None = None
    a2a: str | None = None  # a remote A2A agent's URL
    headers: dict[str, str] = field(default_factory=dict)  # sent to the remote agent
    budget: SubAgentBudgetSpec | None = None  # the limits of each hand-over to it

    @property
    def levels(self) -> int:
        """How many levels of agents this sub-agent brings (itself included)."""
        if self.loaded is None:
            return 1
        return 1 + max((s.levels for s in self.loaded.subagents), default=0)


@dataclass(slots=True)
class LoadedSpec:
    """A spec file and what became of it; ``spec`` is None when it has errors."""

    path: Path  # absolute
    display_path: str
    raw: bytes
    spec: AgentSpec | None = None
    diagnostics: list[Diagnostic] = field(default_factory=list)
    source: YamlSource | None = None  # the data with the position of every key and value
    subagents: list[SubAgentRef] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.spec is not None and not has_errors(self.diagnostics)

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.raw).hexdigest()


def parse_spec(
    raw: bytes,
    path: str | os.PathLike[str],
    display_path: str | None = None,
    *,
    _within: tuple[Path, ...] = (),
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
    if spec is not None and spec.agents is not None:
        _load_subagents(loaded, spec, (*_within, abs_path))
    if not has_errors(loaded.diagnostics):
        loaded.spec = spec
    return loaded


def _load_subagents(loaded: LoadedSpec, spec: AgentSpec, within: tuple[Path, ...]) -> None:
    """Read the sub-agents' files: a missing file, a cycle between specs and a tree
    deeper than ``max_depth`` are errors at the entry that names them."""
    source = loaded.source
    assert source is not None
    entries, problems = agent_entries(source, loaded.path.parent)
    loaded.diagnostics.extend(problems)
    data = source.data if isinstance(source.data, dict) else {}
    tools = [name for name, _ in tool_names(data.get("tools") or [])]

    def report(at: tuple[str | int, ...], message: str) -> None:
        mark = source.mark(at)
        loaded.diagnostics.append(
            Diagnostic(loaded.display_path, mark.line, mark.col, "error", message)
        )

    def shown_path(path: Path) -> str:  # as the lead's path is shown
        return _shown(path, loaded.path.parent, loaded.display_path)

    for entry in entries:
        shown = shown_path(entry.path)
        if entry.kind == "claude":
            claude, found = read_claude_agent(
                entry.path, shown, parent_tools=tools, parent_models=list(spec.models)
            )
            loaded.diagnostics.extend(found)
            if claude is None:
                report(entry.at, f"sub-agent {entry.name!r}: {shown} has errors")
                continue
            text = entry.description or claude.description
            loaded.subagents.append(SubAgentRef(entry.name, text, claude=claude))
            continue
        if entry.path in within:
            chain = " > ".join(
                shown_path(p) for p in (*within[within.index(entry.path) :], entry.path)
            )
            report(entry.at, f"sub-agent {entry.name!r}: a cycle between specs ({chain})")
            continue
        child = load_spec(entry.path, shown, _within=within)
        loaded.diagnostics.extend(d for d in child.diagnostics if d not in loaded.diagnostics)
        if child.spec is None:
            report(entry.at, f"sub-agent {entry.name!r}: {shown} has errors")
            continue
        child_data = child.source.data if child.source is not None else {}
        child_tools = [
            name
            for name, _ in tool_names(
                child_data.get("tools") or [] if isinstance(child_data, dict) else []
            )
        ]
        for item in subagent_widening(spec, child.spec, child_tools):
            mark = source.mark(entry.at)
            loaded.diagnostics.append(
                Diagnostic(
                    loaded.display_path,
                    mark.line,
                    mark.col,
                    "warning",
                    f"sub-agent {entry.name!r} has more than its parent: {item} "
                    "(it runs with the parent's limits all the same)",
                )
            )
        text = entry.description or child.spec.description
        if not text:
            report(entry.at, f"sub-agent {entry.name!r} needs a description (here or in its spec)")
            continue
        loaded.subagents.append(SubAgentRef(entry.name, text, loaded=child))
    remote = spec.agents.entries if spec.agents is not None else {}
    for name, entry_spec in remote.items():
        if entry_spec.a2a is not None:
            text = entry_spec.description or f"A remote agent (A2A) at {entry_spec.a2a}."
            ref = SubAgentRef(name, text, a2a=entry_spec.a2a, headers=entry_spec.headers or {})
            loaded.subagents.append(ref)
    for ref in loaded.subagents:
        declared = remote.get(ref.name)
        ref.budget = declared.budget if declared is not None else None
    limit = spec.max_depth or DEFAULT_MAX_DEPTH
    for ref in loaded.subagents:
        if ref.levels > limit:
            at = next((e.at for e in entries if e.name == ref.name), ("agents",))
            report(
                at,
                f"sub-agent {ref.name!r} nests {ref.levels} levels deep, over max_depth "
                f"{limit} (set max_depth: {ref.levels} to allow it)",
            )
    deepest = max((ref.levels for ref in loaded.subagents), default=0)
    if spec.max_parallel_tree is not None and spec.max_parallel_tree < deepest:
        # a hand-over holds its place while its own hand-overs run
        report(
            ("max_parallel_tree",),
            f"max_parallel_tree {spec.max_parallel_tree} is below the tree's depth {deepest}: "
            f"the deepest hand-over could never start (set max_parallel_tree: {deepest} or more)",
        )


def _shown(path: Path, base: Path, base_shown: str) -> str:
    """``path`` as a file next to the spec shown as ``base_shown`` (in ``base``)."""
    try:
        rel = os.path.relpath(path, base)
    except ValueError:  # another drive (Windows)
        return str(path)
    return os.path.normpath(os.path.join(os.path.dirname(base_shown), rel))


def _validate(source: YamlSource, out: list[Diagnostic]) -> AgentSpec | None:
    context: dict[str, Any] = {}
    try:
        return AgentSpec.model_validate(source.data, context=context)
    except ValidationError as exc:
        out.extend(translate_errors(exc, source, context))
        return None


def load_spec(
    path: str | os.PathLike[str],
    display_path: str | None = None,
    *,
    _within: tuple[Path, ...] = (),
) -> LoadedSpec:
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
    return parse_spec(raw, path, shown, _within=_within)
