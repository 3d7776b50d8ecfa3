"""Skills: discovery, validation, the ``<available_skills>`` prompt block, ``/skill:name``."""

from __future__ import annotations

import os
import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harnessc.runtime.resources.frontmatter import parse_frontmatter
from harnessc.runtime.resources.records import ResourceDiagnostic, Skill
from harnessc.runtime.support.readable import allow_read_tree

__all__ = [
    "MAX_COMPATIBILITY_LENGTH",
    "MAX_DESCRIPTION_LENGTH",
    "MAX_NAME_LENGTH",
    "LoadedFile",
    "expand_skill_command",
    "format_skills_for_prompt",
    "load_skill_file",
    "load_skills",
    "merge_skills",
    "scan_skills",
    "skills_prompt_block",
    "validate_skill_name",
    "xml_escape",
]

MAX_NAME_LENGTH = 64
MAX_DESCRIPTION_LENGTH = 1024
MAX_COMPATIBILITY_LENGTH = 500
_SKIP_DIRS = {"node_modules", "__pycache__"}


@dataclass(slots=True)
class LoadedFile:
    """What one resource file gave: an item (Skill or PromptTemplate) or nothing, and why."""

    path: str
    item: Any = None
    diagnostics: list[ResourceDiagnostic] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        return any(d.severity == "error" for d in self.diagnostics)


def _error(message: str, path: str) -> ResourceDiagnostic:
    return ResourceDiagnostic("error", message, path)


def _warning(message: str, path: str) -> ResourceDiagnostic:
    return ResourceDiagnostic("warning", message, path)


def read_text_file(path: str) -> tuple[str | None, ResourceDiagnostic | None]:
    """The file's text, or a diagnostic saying why it cannot be read."""
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.read(), None
    except UnicodeDecodeError as exc:
        return None, _error(
            f"cannot read file: not valid UTF-8 ({exc.reason} at byte {exc.start})", path
        )
    except IsADirectoryError:
        return None, _error("cannot read file: it is a directory", path)
    except FileNotFoundError:
        return None, _error("cannot read file: not found (broken link?)", path)
    except OSError as exc:
        return None, _error(f"cannot read file: {exc.strerror or exc}", path)


def _name_ok(name: str) -> bool:
    parts = name.split("-")
    return all(p and all(c.isdigit() or (c.isalpha() and c == c.lower()) for c in p) for p in parts)


def validate_skill_name(name: str) -> list[str]:
    """Problems with a skill name (empty list when it is valid), by the Agent Skills
    rules: NFKC-normalised, lowercase letters (any script) and digits in parts joined by
    single hyphens, at most 64 characters."""
    problems: list[str] = []
    name = unicodedata.normalize("NFKC", name)
    if len(name) > MAX_NAME_LENGTH:
        problems.append(f"name {name!r} is longer than {MAX_NAME_LENGTH} characters")
    if not _name_ok(name):
        problems.append(
            f"name {name!r} must use lowercase letters, digits and single hyphens "
            "(no leading, trailing or double hyphens)"
        )
    return problems


def _as_bool(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    return None


def load_skill_file(path: str, default_name: str, *, check_folder: bool = False) -> LoadedFile:
    """Load one skill file. Errors leave ``item`` empty; warnings keep the skill.

    Frontmatter fields other than the ones read here are ignored without a word, as pi
    does (``author``, ``version``, a tool's own settings)."""
    loaded = LoadedFile(path)
    text, problem = read_text_file(path)
    if problem is not None or text is None:
        loaded.diagnostics.append(problem or _error("cannot read file", path))
        return loaded
    front = parse_frontmatter(text)
    if front.error:
        loaded.diagnostics.append(_error(f"{front.error}; skill not loaded", path))
        return loaded
    data = front.data
    raw_name = data.get("name")
    if raw_name is not None and not isinstance(raw_name, str):
        loaded.diagnostics.append(_warning(f"name must be a string, got {raw_name!r}", path))
        raw_name = None
    name = (raw_name or default_name).strip()
    for message in validate_skill_name(name):
        loaded.diagnostics.append(_warning(message, path))
    same = unicodedata.normalize("NFKC", name) == unicodedata.normalize("NFKC", default_name)
    if check_folder and raw_name and not same:
        loaded.diagnostics.append(
            _warning(f"name {name!r} does not match its folder {default_name!r}", path)
        )
    description = data.get("description")
    if isinstance(description, int | float) and not isinstance(description, bool):
        description = str(description)
    if not isinstance(description, str) or not description.strip():
        loaded.diagnostics.append(
            _error("description is missing; a skill needs one (skill not loaded)", path)
        )
        return loaded
    description = description.strip()
    if len(description) > MAX_DESCRIPTION_LENGTH:
        loaded.diagnostics.append(
            _warning(
                f"description is {len(description)} characters, over the "
                f"{MAX_DESCRIPTION_LENGTH} limit",
                path,
            )
        )
    compatibility = data.get("compatibility")
    if isinstance(compatibility, str) and len(compatibility) > MAX_COMPATIBILITY_LENGTH:
        loaded.diagnostics.append(
            _warning(
                f"compatibility is {len(compatibility)} characters, over the "
                f"{MAX_COMPATIBILITY_LENGTH} limit",
                path,
            )
        )
    disable_raw = data.get("disable-model-invocation", data.get("disableModelInvocation", False))
    disable = _as_bool(disable_raw)
    if disable is None:
        loaded.diagnostics.append(
            _warning(f"disable-model-invocation must be true or false, got {disable_raw!r}", path)
        )
        disable = False
    loaded.item = Skill(
        name=name,
        description=description,
        content=front.body.strip(),
        file_path=path,
        disable_model_invocation=disable,
    )
    allow_read_tree(os.path.dirname(path))  # the model reads it (and its files) with read
    return loaded


def _discover(root: Path) -> list[tuple[str, str, bool]]:
    """(file path, default name, is SKILL.md in a folder) for every skill under ``root``."""
    found: list[tuple[str, str, bool]] = []
    if root.is_file() or (os.path.lexists(root) and not root.exists()):
        name = root.parent.name if root.name == "SKILL.md" else root.stem
        return [(str(root), name, root.name == "SKILL.md")]
    direct = root / "SKILL.md"
    if os.path.lexists(direct):
        return [(str(direct), root.name, True)]
    seen: set[str] = set()

    def visit(folder: Path) -> None:
        real = os.path.realpath(folder)
        if real in seen:
            return
        seen.add(real)
        skill = folder / "SKILL.md"
        if os.path.lexists(skill):
            found.append((str(skill), folder.name, True))
            return
        try:
            children = sorted(folder.iterdir(), key=lambda p: p.name)
        except OSError:
            return
        for child in children:
            if child.is_dir() and not child.name.startswith(".") and child.name not in _SKIP_DIRS:
                visit(child)

    seen.add(os.path.realpath(root))
    try:
        entries = sorted(root.iterdir(), key=lambda p: p.name)
    except OSError:
        return found
    for entry in entries:
        if entry.name.startswith("."):
            continue
        if entry.is_dir():
            if entry.name not in _SKIP_DIRS:
                visit(entry)
        elif entry.suffix.lower() == ".md":
            found.append((str(entry), entry.stem, False))
    return found


def scan_skills(
    paths: Iterable[str | os.PathLike[str]],
) -> tuple[list[LoadedFile], list[ResourceDiagnostic]]:
    """Every skill file under ``paths`` loaded on its own (no duplicate check yet)."""
    files: list[LoadedFile] = []
    diagnostics: list[ResourceDiagnostic] = []
    seen: set[str] = set()
    for raw in paths:
        root = Path(os.path.abspath(os.fspath(raw)))
        if not os.path.lexists(root):
            diagnostics.append(_warning("skills path does not exist", str(root)))
            continue
        for file_path, default_name, in_folder in _discover(root):
            if file_path in seen:
                continue
            seen.add(file_path)
            files.append(load_skill_file(file_path, default_name, check_folder=in_folder))
    return files, diagnostics


def merge_loaded(
    files: Sequence[LoadedFile], kind: type[Any], noun: str
) -> tuple[list[Any], list[ResourceDiagnostic]]:
    """Items of type ``kind`` in order, first of each name wins; every file's diagnostics kept."""
    items: list[Any] = []
    diagnostics: list[ResourceDiagnostic] = []
    by_name: dict[str, Any] = {}
    for loaded in files:
        diagnostics.extend(loaded.diagnostics)
        item = loaded.item
        if not isinstance(item, kind):
            continue
        first = by_name.get(item.name)
        if first is not None:
            diagnostics.append(
                _warning(
                    f"{noun} name {item.name!r} is already used by {first.file_path}; "
                    f"this file ({item.file_path}) is ignored",
                    item.file_path,
                )
            )
            continue
        by_name[item.name] = item
        items.append(item)
    return items, diagnostics


def merge_skills(files: Sequence[LoadedFile]) -> tuple[list[Skill], list[ResourceDiagnostic]]:
    """Skills in order, first of each name wins; every file's diagnostics kept."""
    return merge_loaded(files, Skill, "skill")


def load_skills(
    dirs: Iterable[str | os.PathLike[str]] | str | os.PathLike[str],
) -> tuple[list[Skill], list[ResourceDiagnostic]]:
    """Load skills from folders (or single files): (skills, diagnostics). Never raises."""
    if isinstance(dirs, str | os.PathLike):
        dirs = [dirs]
    files, diagnostics = scan_skills(dirs)
    skills, more = merge_skills(files)
    return skills, diagnostics + more


def xml_escape(text: str) -> str:
    return (
        text.replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace('"', "&quot;")
        .replace("'", "&apos;")
    )


def format_skills_for_prompt(skills: Iterable[Skill]) -> str:
    """The system-prompt block listing model-invocable skills ('' when there are none)."""
    visible = [s for s in skills if not s.disable_model_invocation]
    if not visible:
        return ""
    lines = [
        "The skills below hold instructions for specific kinds of task. When a task matches "
        "a skill's description, read the skill's file (its location) with the read tool "
        "before you start. Relative paths inside a skill file are relative to the folder "
        "that holds it.",
        "",
        "<available_skills>",
    ]
    for skill in visible:
        lines += [
            "  <skill>",
            f"    <name>{xml_escape(skill.name)}</name>",
            f"    <description>{xml_escape(skill.description)}</description>",
            f"    <location>{xml_escape(skill.file_path)}</location>",
            "  </skill>",
        ]
    lines.append("</available_skills>")
    return "\n".join(lines)


def skills_prompt_block(skills: Iterable[Skill], active_tools: Iterable[str]) -> str:
    """The system prompt's skills block, as pi adds it: only while the ``read`` tool is
    active (without it the model cannot open a skill's file), else ''."""
    if "read" not in set(active_tools):
        return ""
    return format_skills_for_prompt(skills)


_SKILL_COMMAND = re.compile(r"^/skill:(\S+)(?:\s+(.*))?$", re.DOTALL)


def expand_skill_command(text: str, skills: Iterable[Skill]) -> str | None:
    """``/skill:name args`` -> the skill body in a ``<skill>`` tag plus the args.

    None when ``text`` is not such a command or names no known skill.
    """
    match = _SKILL_COMMAND.match(text.strip())
    if not match:
        return None
    name = match.group(1)
    skill = next((s for s in skills if s.name == name), None)
    if skill is None:
        return None
    base_dir = os.path.dirname(skill.file_path)
    block = (  # as pi expands it
        f'<skill name="{xml_escape(skill.name)}" location="{xml_escape(skill.file_path)}">\n'
        f"References are relative to {base_dir}.\n\n{skill.content.strip()}\n</skill>"
    )
    args = (match.group(2) or "").strip()
    return f"{block}\n\n{args}" if args else block
