"""Prompt templates: loading, ``/name args`` expansion and argument substitution."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from pathlib import Path

from harnessc.runtime.resources.frontmatter import parse_frontmatter
from harnessc.runtime.resources.records import PromptTemplate, ResourceDiagnostic
from harnessc.runtime.resources.skills import LoadedFile, merge_loaded, read_text_file

__all__ = [
    "DESCRIPTION_FALLBACK_LENGTH",
    "expand_prompt_template",
    "load_prompt_templates",
    "load_template_file",
    "merge_templates",
    "parse_command_args",
    "scan_templates",
    "substitute_args",
]

DESCRIPTION_FALLBACK_LENGTH = 60


def _first_line_description(body: str) -> str | None:
    line = next((ln.strip() for ln in body.splitlines() if ln.strip()), None)
    if line is None:
        return None
    if len(line) > DESCRIPTION_FALLBACK_LENGTH:
        return line[:DESCRIPTION_FALLBACK_LENGTH] + "..."
    return line


def load_template_file(path: str) -> LoadedFile:
    """Load one template; name = file name without ``.md``."""
    loaded = LoadedFile(path)
    text, problem = read_text_file(path)
    if problem is not None or text is None:
        loaded.diagnostics.append(problem or ResourceDiagnostic("error", "cannot read file", path))
        return loaded
    front = parse_frontmatter(text)
    if front.error:
        loaded.diagnostics.append(
            ResourceDiagnostic("error", f"{front.error}; template not loaded", path)
        )
        return loaded
    name = Path(path).stem
    if not name or any(ch.isspace() for ch in name):
        loaded.diagnostics.append(
            ResourceDiagnostic(
                "warning", f"template name {name!r} cannot be typed as /{name}", path
            )
        )
    body = front.body.strip()
    description = front.data.get("description")
    if description is not None and not isinstance(description, str):
        description = str(description)
    hint = front.data.get("argument-hint", front.data.get("argumentHint"))
    loaded.item = PromptTemplate(
        name=name,
        description=(description.strip() if description else None) or _first_line_description(body),
        content=body,
        file_path=path,
        argument_hint=None if hint is None else str(hint),
    )
    return loaded


def scan_templates(
    paths: Iterable[str | os.PathLike[str]],
) -> tuple[list[LoadedFile], list[ResourceDiagnostic]]:
    """Every ``.md`` file directly in each folder (or the file itself), loaded on its own."""
    files: list[LoadedFile] = []
    diagnostics: list[ResourceDiagnostic] = []
    seen: set[str] = set()
    for raw in paths:
        root = Path(os.path.abspath(os.fspath(raw)))
        if not os.path.lexists(root):
            diagnostics.append(
                ResourceDiagnostic("warning", "templates path does not exist", str(root))
            )
            continue
        if root.is_dir():
            try:
                candidates = sorted(
                    p
                    for p in root.iterdir()
                    if p.suffix.lower() == ".md" and not p.name.startswith(".")
                )
            except OSError as exc:
                diagnostics.append(
                    ResourceDiagnostic(
                        "error", f"cannot list folder: {exc.strerror or exc}", str(root)
                    )
                )
                continue
        else:
            candidates = [root]
        for path in candidates:
            if str(path) in seen or path.is_dir():
                continue
            seen.add(str(path))
            files.append(load_template_file(str(path)))
    return files, diagnostics


def merge_templates(
    files: Sequence[LoadedFile],
) -> tuple[list[PromptTemplate], list[ResourceDiagnostic]]:
    """Templates in order, first of each name wins."""
    return merge_loaded(files, PromptTemplate, "template")


def load_prompt_templates(
    dirs: Iterable[str | os.PathLike[str]] | str | os.PathLike[str],
) -> tuple[list[PromptTemplate], list[ResourceDiagnostic]]:
    """Load templates from folders (or single files): (templates, diagnostics). Never raises."""
    if isinstance(dirs, str | os.PathLike):
        dirs = [dirs]
    files, diagnostics = scan_templates(dirs)
    templates, more = merge_templates(files)
    return templates, diagnostics + more


def parse_command_args(text: str) -> list[str]:
    """Split template arguments as pi splits them (not shell rules): spaces and tabs
    separate, ``"`` or ``'`` group until the same quote (no escapes: a backslash is a
    character), empty arguments are dropped, an unclosed quote runs to the end."""
    args: list[str] = []
    current: list[str] = []
    quote: str | None = None
    for char in text:
        if quote is not None:
            if char == quote:
                quote = None
            else:
                current.append(char)
        elif char in "\"'":
            quote = char
        elif char in " \t":
            if current:
                args.append("".join(current))
                current = []
        else:
            current.append(char)
    if current:
        args.append("".join(current))
    return args


_PLACEHOLDER = re.compile(
    r"\$\{(?P<dnum>\d+):-(?P<ddef>[^}]*)\}"  # ${1:-default}
    r"|\$\{(?:@|ARGUMENTS):-(?P<adef>[^}]*)\}"  # ${@:-default}
    r"|\$\{@:(?P<start>\d+)(?::(?P<len>\d+))?\}"  # ${@:N} ${@:N:L}
    r"|\$\{(?P<bnum>\d+)\}"  # ${1}
    r"|\$\{(?:@|ARGUMENTS)\}"  # ${@} ${ARGUMENTS}
    r"|\$ARGUMENTS"
    r"|\$@"
    r"|\$(?P<num>\d+)"
)


def substitute_args(content: str, args: Sequence[str]) -> str:
    """Fill ``$1..$N``, ``$@``, ``$ARGUMENTS``, ``${@:N}``, ``${@:N:L}``, ``${1:-default}``.

    One pass, so text coming from the arguments is never substituted again.
    """
    everything = " ".join(args)

    def positional(number: str) -> str:
        index = int(number) - 1
        return args[index] if 0 <= index < len(args) else ""

    def replace(match: re.Match[str]) -> str:
        groups = match.groupdict()
        if groups["dnum"] is not None:
            value = positional(groups["dnum"])
            return value if value else substitute_args(groups["ddef"], args)
        if groups["adef"] is not None:
            return everything if everything else substitute_args(groups["adef"], args)
        if groups["start"] is not None:
            start = max(int(groups["start"]) - 1, 0)
            if groups["len"] is not None:
                return " ".join(args[start : start + int(groups["len"])])
            return " ".join(args[start:])
        if groups["bnum"] is not None:
            return positional(groups["bnum"])
        if groups["num"] is not None:
            return positional(groups["num"])
        return everything

    return _PLACEHOLDER.sub(replace, content)


_COMMAND = re.compile(r"^/(\S+)(?:\s+(.*))?$", re.DOTALL)


def expand_prompt_template(text: str, templates: Iterable[PromptTemplate]) -> str | None:
    """``/name args`` -> the template with the args filled in; None when not a template."""
    match = _COMMAND.match(text.strip())
    if not match:
        return None
    name = match.group(1)
    template = next((t for t in templates if t.name == name), None)
    if template is None:
        return None
    return substitute_args(template.content, parse_command_args(match.group(2) or ""))
