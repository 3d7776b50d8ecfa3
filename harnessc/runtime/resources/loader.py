"""``load_resources``: skills, prompt templates and context files in one AgentHarnessResources.

What it loaded is kept, with the stat facts of every file and folder it came from: a
second call with the same arguments (another session of a service, a ``/reload``)
returns the same object while none of them changed, and loads again when one did.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable

from harnessc.runtime.resources.context_files import context_signature, load_context_files
from harnessc.runtime.resources.types import (
    AgentHarnessResources,
    ContextFileSettings,
    PromptTemplate,
    ResourceDiagnostic,
    Skill,
)

__all__ = ["load_resources"]

PathLike = str | os.PathLike[str]

_Key = tuple[tuple[str, ...], tuple[str, ...], ContextFileSettings | None, str]
# What was loaded, by its arguments: (the stat facts it was loaded with, the resources).
_LOADED: dict[_Key, tuple[tuple[object, ...], AgentHarnessResources]] = {}
_LOADED_MAX = 32
_LOADED_LOCK = threading.Lock()
# Folders below a skills path that hold no skills (as the skill scan skips them).
_SKIPPED = frozenset({"node_modules", "__pycache__"})


def _paths(value: Iterable[PathLike] | PathLike | None) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str | os.PathLike):
        return [os.path.abspath(os.fspath(value))]
    return [os.path.abspath(os.fspath(v)) for v in value]


def load_resources(
    skills: Iterable[PathLike] | PathLike | None = None,
    prompt_templates: Iterable[PathLike] | PathLike | None = None,
    *,
    context_files: ContextFileSettings | None = None,
    cwd: PathLike | None = None,
) -> AgentHarnessResources:
    """Load every kind; diagnostics are merged. Never raises.

    ``context_files``: read the project's context files for ``cwd`` (default: the
    process's working directory); None reads none.
    """
    skill_dirs = _paths(skills)
    template_dirs = _paths(prompt_templates)
    folder = os.path.abspath(os.fspath(cwd)) if cwd is not None else os.getcwd()
    key: _Key = (tuple(skill_dirs), tuple(template_dirs), context_files, folder)
    facts = _signature(skill_dirs, template_dirs, context_files, folder)
    with _LOADED_LOCK:
        known = _LOADED.get(key)
    if known is not None and known[0] == facts:
        return known[1]
    loaded = _load(skill_dirs, template_dirs, context_files, folder)
    with _LOADED_LOCK:
        if key not in _LOADED and len(_LOADED) >= _LOADED_MAX:
            del _LOADED[next(iter(_LOADED))]
        _LOADED[key] = (facts, loaded)
    return loaded


def _load(
    skill_dirs: list[str],
    template_dirs: list[str],
    context_files: ContextFileSettings | None,
    folder: str,
) -> AgentHarnessResources:
    # imported only when asked for: an agent with context files only stays light
    skill_items: list[Skill] = []
    skill_diags: list[ResourceDiagnostic] = []
    templates: list[PromptTemplate] = []
    template_diags: list[ResourceDiagnostic] = []
    if skill_dirs:
        from harnessc.runtime.resources.skills import load_skills

        skill_items, skill_diags = load_skills(skill_dirs)
    if template_dirs:
        from harnessc.runtime.resources.templates import load_prompt_templates

        templates, template_diags = load_prompt_templates(template_dirs)
    files, context_diags = (
        load_context_files(context_files, folder) if context_files is not None else ([], [])
    )
    return AgentHarnessResources(
        prompt_templates=templates,
        skills=skill_items,
        diagnostics=skill_diags + template_diags + context_diags,
        skill_dirs=skill_dirs,
        template_dirs=template_dirs,
        context_files=files,
        context_settings=context_files,
        cwd=folder if context_files is not None else None,
    )


def _signature(
    skill_dirs: list[str],
    template_dirs: list[str],
    context_files: ContextFileSettings | None,
    folder: str,
) -> tuple[object, ...]:
    """Stat facts of everything a load reads: the context files' candidate paths, the
    skills paths with every folder and file below them, the template folders and the
    files in them. Any change (a file written, added, removed) changes it."""
    facts: list[object] = []
    if context_files is not None:
        facts.append(context_signature(context_files, folder))
    seen: set[str] = set()
    for path in skill_dirs:
        _tree_facts(path, facts, seen, deep=True)
    for path in template_dirs:
        _tree_facts(path, facts, seen, deep=False)
    return tuple(facts)


def _tree_facts(path: str, facts: list[object], seen: set[str], *, deep: bool) -> None:
    """Append ``path``'s stat facts and, for a folder, those of its entries (and,
    ``deep``, of the folders below it but hidden and skipped ones, each once)."""
    try:
        st = os.stat(path)
    except OSError:
        facts.append((path, None))
        return
    facts.append((path, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_mode))
    real = os.path.realpath(path)
    if real in seen or not os.path.isdir(path):
        return
    seen.add(real)
    try:
        with os.scandir(path) as listing:
            entries = sorted(listing, key=lambda entry: entry.name)
    except OSError:
        facts.append((path, "unlisted"))
        return
    for entry in entries:
        if entry.name.startswith(".") and deep:
            continue
        try:
            is_dir = entry.is_dir()
        except OSError:
            is_dir = False
        if is_dir and deep and entry.name not in _SKIPPED:
            _tree_facts(entry.path, facts, seen, deep=True)
            continue
        try:
            est = entry.stat()
        except OSError:
            facts.append((entry.path, None))
            continue
        facts.append((entry.path, est.st_ino, est.st_size, est.st_mtime_ns, est.st_ctime_ns))
