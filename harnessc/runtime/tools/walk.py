"""Walking a folder for the search tools: sorted, ignore files honoured, glob filters.

A walk skips what ripgrep skips by default (see :class:`Ignores`) plus the agent's own
session transcripts, and whatever the permission rules keep from the tool (a
``visible`` test from the tool context's PathFilter). Globs and ignore files use
pathspec's gitignore semantics, a glob's ``{a,b}`` groups are expanded by bracex (both
imported on first use).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from harnessc.runtime.tools.fileio import open_regular
from harnessc.runtime.tools.paths import is_inside

__all__ = [
    "ALWAYS_SKIPPED",
    "IGNORED_DIRS",
    "Entry",
    "Ignores",
    "WalkStats",
    "compile_glob",
    "glob_matches",
    "is_transcript",
    "walk",
]

# Folders no walk enters: version control data and the agent's own files (sessions,
# logs) under ``.harnessc``.
ALWAYS_SKIPPED = frozenset({".git", ".hg", ".svn", ".harnessc"})
# Folders skipped unless ignore files are turned off (``no_ignore``).
IGNORED_DIRS = frozenset({"node_modules"})
IGNORE_FILES = (".gitignore", ".ignore")
_MAX_IGNORE_FILE = 1 << 20  # bytes of one ignore file that are read
_MAX_ALTERNATIVES = 256  # a glob's {a,b} groups expand to at most this many globs


@dataclass(slots=True)
class Entry:
    rel: str  # posix path relative to the walk root
    path: str  # absolute path
    is_dir: bool


@dataclass(slots=True)
class WalkStats:
    """What a walk did besides yielding entries."""

    folders: int = 0  # folders read
    hidden: int = 0  # files and folders the permission rules kept from the tool
    ignored: int = 0  # files and folders skipped by ignore files or as transcripts


@dataclass(slots=True, frozen=True)
class _IgnoreFile:
    spec: Any  # pathspec.GitIgnoreSpec
    lead: str  # prepended to the walk-relative path (ignore files above the root)
    strip: int  # characters cut from the walk-relative path (ignore files below it)

    def verdict(self, rel: str, is_dir: bool) -> bool | None:
        """True: ignored, False: re-included by a ``!`` pattern, None: not named.

        Only a pattern naming the entry itself counts, not one naming a folder above it
        (as in ripgrep): a walk never enters an ignored folder, and a walk started
        inside one (``grep path=build``) searches it.
        """
        path = self.lead + rel[self.strip :] + ("/" if is_dir else "")
        for pattern in reversed(self.spec.patterns):  # the last pattern naming it decides
            if pattern.include is None or pattern.regex is None:
                continue
            if _names_itself(pattern.regex.match(path), path):
                return bool(pattern.include)
        return None


@dataclass(slots=True)
class Ignores:
    """The ignore rules of a walk, as ripgrep reads them by default: ``.gitignore`` and
    ``.ignore`` in every folder of the walk and in the folders above its root up to the
    repository top (the nearest folder above holding ``.git``; without one, the
    workspace),
    ``.git/info/exclude`` at that top, and ``node_modules``. A deeper file's patterns
    win over a shallower one's; ``!pattern`` re-includes. Session transcripts (JSONL
    files that start with a session header) are skipped too.
    """

    files: tuple[_IgnoreFile, ...] = field(default_factory=tuple)

    @classmethod
    def above(cls, root: Path, workspace: Path | None) -> Ignores:
        """The ignore files that apply to a walk of ``root`` from the folders above it."""
        chain = [root, *root.parents]
        repo = next((i for i, folder in enumerate(chain) if _holds_git(folder)), None)
        if repo is not None:
            chain = chain[: repo + 1]
        elif workspace is not None and is_inside(root, workspace):
            chain = chain[: chain.index(workspace) + 1]
        else:  # neither in a repository nor in the workspace: the root's own files
            chain = [root]
        top = chain[-1]
        files: list[_IgnoreFile] = []
        exclude = _read_ignore(top / ".git" / "info" / "exclude")
        if exclude is not None:
            files.append(_IgnoreFile(exclude, _lead(root, top), 0))
        for folder in reversed(chain[1:]):  # the root's own files are read by the walk
            for name in IGNORE_FILES:
                spec = _read_ignore(folder / name)
                if spec is not None:
                    files.append(_IgnoreFile(spec, _lead(root, folder), 0))
        return cls(tuple(files))

    def ignored(self, rel: str, is_dir: bool) -> bool:
        for one in reversed(self.files):  # deepest first: the last word is the deepest's
            verdict = one.verdict(rel, is_dir)
            if verdict is not None:
                return verdict
        return False

    def below(self, folder: str, prefix: str) -> Ignores:
        """These rules plus the ignore files of ``folder`` (walk-relative ``prefix``)."""
        added = [
            _IgnoreFile(spec, "", len(prefix))
            for name in IGNORE_FILES
            if (spec := _read_ignore(Path(folder) / name)) is not None
        ]
        return Ignores((*self.files, *added)) if added else self


def _holds_git(folder: Path) -> bool:
    try:
        return os.path.lexists(folder / ".git")
    except OSError:
        return False


def _lead(root: Path, folder: Path) -> str:
    rel = os.path.relpath(root, folder)
    return "" if rel == "." else rel.replace(os.sep, "/") + "/"


def _read_ignore(path: Path) -> Any:
    """pathspec's GitIgnoreSpec of the ignore file at ``path``; None when there is no
    regular file there. A line pathspec cannot read is left out, as git does."""
    try:
        if not path.is_file() or path.is_symlink():
            return None
        with open_regular(str(path)) as fh:
            data = fh.read(_MAX_IGNORE_FILE)
    except OSError:
        return None
    import pathspec

    lines = data.decode("utf-8", "replace").splitlines()
    try:
        return pathspec.GitIgnoreSpec.from_lines(lines)
    except Exception:  # one bad line: keep the others
        kept = []
        for line in lines:
            try:
                pathspec.GitIgnoreSpec.from_lines([line])
            except Exception:
                continue
            kept.append(line)
        return pathspec.GitIgnoreSpec.from_lines(kept)


_SESSION_HEADER = re.compile(rb'^\s*\{\s*"type"\s*:\s*"session"\s*[,}]')


def is_transcript(path: str) -> bool:
    """Whether ``path`` is a session transcript (a JSONL file whose first line is a
    harnessc / pi session header): old tool output a search must not bring back."""
    if not path.endswith(".jsonl"):
        return False
    try:
        with open_regular(path) as fh:
            head = fh.read(256)
    except OSError:
        return False
    return _SESSION_HEADER.match(head) is not None


# -- globs -------------------------------------------------------------------------------


def _alternatives(pattern: str) -> list[str]:
    """``{a,b}`` groups (nested too) and ``{1..3}`` ranges expanded, by bracex;
    ValueError past _MAX_ALTERNATIVES."""
    import bracex

    try:
        return list(bracex.expand(pattern, keep_escapes=True, limit=_MAX_ALTERNATIVES))
    except bracex.ExpansionLimitException:
        raise ValueError(f"glob {pattern!r} expands to over {_MAX_ALTERNATIVES} patterns") from None


@lru_cache(maxsize=256)
def compile_glob(pattern: str) -> tuple[re.Pattern[str], ...]:
    """pathspec's regexes for ``pattern`` (one per ``{a,b}`` alternative).

    Patterns without ``/`` match the file name (``*.py`` finds files at any depth);
    patterns with ``/`` match the path from the search root (``src/**/*.py``); a final
    ``/`` matches folders only. ValueError for a glob that cannot be read.
    """
    import pathspec

    cleaned = pattern.strip()
    while cleaned.startswith("./"):
        cleaned = cleaned[2:]
    regexes: list[re.Pattern[str]] = []
    for one in _alternatives(cleaned):
        one = "/" + one.lstrip("/") if "/" in one.rstrip("/") else one
        if one.startswith(("!", "#")):
            one = "\\" + one  # a literal first character, not a negation or a comment
        try:
            patterns = pathspec.GitIgnoreSpec.from_lines([one]).patterns
        except Exception as exc:
            raise ValueError(f"glob {pattern!r} cannot be read: {exc}") from None
        regexes.extend(p.regex for p in patterns if p.regex is not None and p.include)
    return tuple(regexes)


def glob_matches(pattern: str, rel: str, is_dir: bool = False) -> bool:
    """Whether the entry at ``rel`` (relative to the search root) is one ``pattern``
    names itself (not only through a folder above it)."""
    subject = rel + "/" if is_dir else rel
    return any(_names_itself(regex.match(subject), subject) for regex in compile_glob(pattern))


def _names_itself(found: re.Match[str] | None, path: str) -> bool:
    """Whether a gitignore pattern's match names ``path`` itself: pathspec's regexes
    also match what is inside a named folder, marking the folder's ``/`` as ``ps_d``."""
    if found is None:
        return False
    mark = found.groupdict().get("ps_d")
    return mark is None or found.end() == len(path)


# -- the walk ----------------------------------------------------------------------------


def walk(
    root: Path,
    *,
    confine: Path | None = None,
    dirs: bool = False,
    stop: Callable[[], bool] | None = None,
    ignores: Ignores | None = None,
    visible: Callable[[str, str], bool] | None = None,
    stats: WalkStats | None = None,
) -> Iterator[Entry]:
    """Regular files (and folders when ``dirs``) under ``root``, depth first, sorted.

    Directory symlinks are not followed; FIFOs, sockets and devices are skipped (opening
    one could block). With ``confine``, file symlinks whose target lies outside it are
    skipped. With ``ignores``, what they name is skipped (see :class:`Ignores`); with
    ``visible`` (path, real path -> bool), what it refuses. Ends early once ``stop()`` is
    true. ``stats`` counts what was read and skipped.
    """
    stats = stats if stats is not None else WalkStats()
    stack: list[tuple[str, str, Ignores | None]] = [(str(root), "", ignores)]
    while stack:
        if stop is not None and stop():
            return
        folder, prefix, rules = stack.pop()
        try:
            with os.scandir(folder) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError:
            continue
        stats.folders += 1
        if rules is not None:
            rules = rules.below(folder, prefix)
        subdirs: list[tuple[str, str, Ignores | None]] = []
        for entry in entries:
            rel = f"{prefix}{entry.name}"
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
                is_link = entry.is_symlink()
            except OSError:
                continue
            if is_dir:
                if entry.name in ALWAYS_SKIPPED:
                    continue
                if rules is not None and (entry.name in IGNORED_DIRS or rules.ignored(rel, True)):
                    stats.ignored += 1
                    continue
                if visible is not None and not visible(entry.path, entry.path):
                    stats.hidden += 1
                    continue
                if dirs:
                    yield Entry(rel, entry.path, True)
                subdirs.append((entry.path, rel + "/", rules))
                continue
            real = entry.path
            if is_link:
                try:
                    real = os.path.realpath(entry.path)
                except OSError:  # the link changed while it was read
                    continue
                if confine is not None and not is_inside(real, confine):
                    continue
                if os.path.isdir(real):
                    if dirs and _shown(entry, rel, real, True, rules, visible, stats):
                        yield Entry(rel, entry.path, True)
                    continue
                if not os.path.isfile(real):
                    continue
            else:
                try:
                    regular = entry.is_file(follow_symlinks=False)
                except OSError:
                    continue
                if not regular:  # FIFO, socket, device
                    continue
            if _shown(entry, rel, real, False, rules, visible, stats):
                yield Entry(rel, entry.path, False)
        stack.extend(reversed(subdirs))


def _shown(
    entry: os.DirEntry[str],
    rel: str,
    real: str,
    is_dir: bool,
    rules: Ignores | None,
    visible: Callable[[str, str], bool] | None,
    stats: WalkStats,
) -> bool:
    if rules is not None and (rules.ignored(rel, is_dir) or is_transcript(real)):
        stats.ignored += 1
        return False
    if visible is not None and not visible(entry.path, real):
        stats.hidden += 1
        return False
    return True
