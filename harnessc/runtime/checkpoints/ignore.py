"""What a checkpoint leaves out: version-control folders, what ``.gitignore`` files
name, and the spec's own ``exclude`` patterns.

Git's rules, read with pathspec's gitignore semantics: the ``.gitignore`` of every folder
of the workspace, of the folders above it up to the top of its git repository, and that
repository's ``.git/info/exclude``; a deeper file's patterns win over a shallower one's
and the last pattern naming a path decides (``!pattern`` re-includes); a folder left out
is not entered, so nothing inside it can be re-included. The spec's patterns (gitignore
syntax, rooted at the workspace) come last and cannot be re-included by a ``.gitignore``.
The user's global excludes file (``core.excludesFile``) is not read: git's
configuration is the user's, and a checkpoint must not depend on it.
"""

from __future__ import annotations

import itertools
import os
import re
from collections.abc import Sequence

__all__ = ["ALWAYS_SKIPPED", "IgnoreRules", "PatternSet"]

# Folders (or files) never recorded: version control data and older harnessc's own folder.
ALWAYS_SKIPPED = frozenset({".git", ".hg", ".svn", ".jj", ".harnessc"})
IGNORE_FILE = ".gitignore"
_MAX_IGNORE_FILE = 1 << 20
_SERIALS = itertools.count(1)


class PatternSet:
    """The patterns of one ignore file (or of the spec), rooted at a folder."""

    __slots__ = ("patterns", "quick", "source", "serial")

    def __init__(self, lines: Sequence[str], source: str) -> None:
        import pathspec

        self.serial = next(_SERIALS)  # never reused, unlike id()
        try:
            spec = pathspec.GitIgnoreSpec.from_lines(list(lines))
        except Exception:  # one bad line: keep the others, as git does
            kept = []
            for line in lines:
                try:
                    pathspec.GitIgnoreSpec.from_lines([line])
                except Exception:
                    continue
                kept.append(line)
            spec = pathspec.GitIgnoreSpec.from_lines(kept)
        self.source = source
        self.patterns: list[tuple[re.Pattern[str], bool]] = [
            (p.regex, bool(p.include))
            for p in spec.patterns
            if p.include is not None and p.regex is not None
        ]
        # One regex for "does any pattern match at all": most paths match none.
        self.quick: re.Pattern[str] | None = None
        if self.patterns:
            joined = "|".join(
                "(?:" + regex.pattern.replace("(?P<ps_d>", "(") + ")" for regex, _ in self.patterns
            )
            try:
                self.quick = re.compile(joined)
            except re.error:
                self.quick = None

    def __bool__(self) -> bool:
        return bool(self.patterns)

    def verdict(self, path: str) -> bool | None:
        """True: left out, False: re-included, None: no pattern names ``path`` (a
        folder's path ends with ``/``). Only a pattern naming the path itself counts,
        not one naming a folder above it (the walk never enters a folder left out)."""
        quick = self.quick
        if quick is not None and quick.match(path) is None:
            return None
        for regex, include in reversed(self.patterns):
            found = regex.match(path)
            if found is None:
                continue
            mark = found.groupdict().get("ps_d")
            if mark is None or found.end() == len(path):
                return include
        return None


def read_patterns(path: str, source: str) -> PatternSet | None:
    """The ignore file at ``path``; None when there is no regular file with patterns."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return None
    try:
        import stat

        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        data = os.read(fd, _MAX_IGNORE_FILE)
    except OSError:
        return None
    finally:
        os.close(fd)
    found = _parse(source, data)
    return found if found else None


def _parse(source: str, data: bytes) -> PatternSet:
    known = _PARSED.get((source, data))
    if known is None:
        if len(_PARSED) > 4096:
            _PARSED.clear()
        known = _PARSED[(source, data)] = PatternSet(
            data.decode("utf-8", "replace").splitlines(), source
        )
    return known


# Ignore files read before, by their name and content: the same object each scan, so
# an unchanged folder under unchanged rules is recognised (``IgnoreRules.key``).
_PARSED: dict[tuple[str, bytes], PatternSet] = {}


class IgnoreRules:
    """The rules that apply inside one folder of the walk: the sets of the folders above
    it (each with the prefix its paths are relative to), deepest last."""

    __slots__ = ("sets", "spec", "key")

    def __init__(
        self, sets: tuple[tuple[PatternSet | _Rooted, int], ...], spec: PatternSet | None
    ) -> None:
        self.sets = sets  # (patterns, characters of the walk-relative path to cut)
        self.spec = spec  # the spec's exclude patterns, rooted at the workspace
        # the same for the same rules (pattern sets are shared while their files are
        # unchanged): what a folder memo of the scan compares
        self.key = (
            spec.serial if spec else 0,
            *(part for one, cut in sets for part in (_ident(one), cut)),
        )

    @classmethod
    def for_workspace(cls, root: str, exclude: Sequence[str] = ()) -> IgnoreRules:
        """The rules at the workspace root: the ignore files above it (up to its git
        repository's top) and the spec's ``exclude`` patterns."""
        sets: list[tuple[PatternSet | _Rooted, int]] = []
        chain = [root]
        current = root
        top: str | None = None
        while True:
            if os.path.lexists(os.path.join(current, ".git")):
                top = current
                break
            parent = os.path.dirname(current)
            if parent == current:
                break
            current = parent
            chain.append(current)
        if top is not None:
            exclude_file = read_patterns(
                os.path.join(top, ".git", "info", "exclude"), ".git/info/exclude"
            )
            above = chain[1:]
            lead_sets: list[tuple[PatternSet, str]] = []
            if exclude_file is not None:
                lead_sets.append((exclude_file, _lead(root, top)))
            for folder in reversed(above):
                found = read_patterns(os.path.join(folder, IGNORE_FILE), folder + "/.gitignore")
                if found is not None:
                    lead_sets.append((found, _lead(root, folder)))
            for patterns, lead in lead_sets:
                sets.append((_Rooted(patterns, lead), 0))
        spec = None
        if exclude:
            text = "\n".join(exclude).encode("utf-8", "surrogateescape")
            spec = _parse("the spec's checkpoints.exclude", text)
        return cls(tuple(sets), spec if spec else None)

    def below(self, folder: str, rel: str) -> IgnoreRules:
        """These rules plus the ``.gitignore`` of ``folder`` (walk-relative ``rel``,
        ``""`` at the root or ending with ``/``)."""
        found = read_patterns(os.path.join(folder, IGNORE_FILE), (rel or "") + IGNORE_FILE)
        if found is None:
            return self
        return IgnoreRules((*self.sets, (found, len(rel))), self.spec)

    def reason(self, rel: str, is_dir: bool) -> str | None:
        """Why the entry at walk-relative ``rel`` is left out (the file that says so),
        or None when it is recorded."""
        subject = rel + "/" if is_dir else rel
        if self.spec is not None and self.spec.verdict(subject):
            return self.spec.source
        for patterns, cut in reversed(self.sets):
            verdict = patterns.verdict(subject[cut:])
            if verdict is not None:
                return patterns.source if verdict else None
        return None


def _ident(patterns: PatternSet | _Rooted) -> int:
    return patterns.inner.serial if isinstance(patterns, _Rooted) else patterns.serial


class _Rooted:
    """An ignore file of a folder above the walk root: its paths get ``lead`` first."""

    __slots__ = ("inner", "lead", "source")

    def __init__(self, inner: PatternSet, lead: str) -> None:
        self.inner = inner
        self.lead = lead
        self.source = inner.source

    def verdict(self, path: str) -> bool | None:
        return self.inner.verdict(self.lead + path)


def _lead(root: str, folder: str) -> str:
    rel = os.path.relpath(root, folder)
    return "" if rel == "." else rel.replace(os.sep, "/") + "/"
