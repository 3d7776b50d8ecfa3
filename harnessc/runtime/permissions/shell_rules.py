"""What a shell command runs, as bash would read it: the input of ``Bash(...)`` rules.

``analyse(command)`` parses the command with tree-sitter-bash and lists every simple
command anywhere in it: after ``;``, ``&``, ``&&``, ``||``, ``|``, ``|&`` and newlines,
inside ``$(...)``, backticks, ``<(...)`` / ``>(...)``, subshells, ``{ ...; }`` groups,
``if`` / ``while`` / ``for`` / ``case`` bodies, function bodies and here-documents. Words
are unquoted and unescaped (``'rm'``, ``r''m``, ``\\rm`` -> ``rm``); assignments before
a command (``FOO=1 rm``) are dropped. Wrappers are unwrapped, and both the wrapper and
the command it runs are listed: ``env``, ``command``, ``builtin``, ``exec``, ``nice``,
``time``, ``nohup``, ``setsid``, ``stdbuf``, ``ionice``, ``timeout``, ``coproc``,
``xargs``, ``sudo``, ``doas``, ``watch``; the strings of ``bash -c`` / ``sh -c`` /
``zsh -c`` (and the other shells), ``su -c``, ``eval``, ``trap`` and ``alias`` are parsed
again; ``find ... -exec / -execdir / -ok / -okdir CMD ;`` lists CMD, and ``find ...
-delete`` lists ``rm -rf`` of find's starting points (it removes every file and folder
it matches, as ``rm -rf`` does).

What cannot be read is ``unreadable`` (the caller asks, never allows): a parse error, a
command name known only when it runs (``$X``, ``$(...)``, a glob or brace expansion), a
wrapper whose command or string is not literal, a shell reading its commands from its
input (``echo rm V | bash``), a redirection target that is not literal.

``writes`` are the files output redirections (``>``, ``>>``, ``&>``, ``>|``, ``<>``)
write; ``/dev/null`` and the like are left out.

Pure; tree-sitter is imported on the first analysis.
"""

from __future__ import annotations

import codecs
import functools
import os
import re
import shlex
import threading
from collections.abc import Sequence
from typing import Any

from msgspec import Struct

__all__ = ["Analysis", "Command", "analyse", "command_matches", "text_matches"]

_INSTALL_HINT = "pip install 'tree-sitter>=0.23,<1' 'tree-sitter-bash>=0.23,<1'"
_MAX_DEPTH = 8  # strings parsed again (bash -c 'eval "sh -c ..."'): deeper is unreadable
_HARMLESS_TARGETS = frozenset(
    {"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty", "/dev/zero", "/dev/full"}
)
# Variables that make an allowed program run other code: a command run with one of them
# set is not vouched for by an allow rule.
_RISKY_ENV = re.compile(
    r"^(PATH|IFS|ENV|BASH_ENV|SHELLOPTS|BASHOPTS|PS4|PROMPT_COMMAND|LD_\w+|DYLD_\w+|"
    r"\w*PAGER|EDITOR|VISUAL|GIT_\w+|SSH_ASKPASS|PERL5OPT|PERL5LIB|NODE_OPTIONS|RUBYOPT|"
    r"PYTHONSTARTUP|PYTHONINSPECT)$"
)
_SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "yash", "fish"})
# Variables whose value a program runs as a command (git's pager, an editor, ...).
_COMMAND_VARIABLES = frozenset(
    {"PAGER", "GIT_PAGER", "MANPAGER", "SYSTEMD_PAGER", "EDITOR", "VISUAL", "GIT_EDITOR"}
    | {"GIT_SSH_COMMAND", "GIT_EXTERNAL_DIFF", "PROMPT_COMMAND", "SUDO_ASKPASS", "SSH_ASKPASS"}
    | {"GIT_ASKPASS", "LESSOPEN", "LESSCLOSE", "FCEDIT"}
)
# Variables naming a file a shell or the loader runs: a value known only at run time
# cannot be read.
_FILE_VARIABLES = frozenset({"BASH_ENV", "ENV", "LD_PRELOAD", "LD_AUDIT", "DYLD_INSERT_LIBRARIES"})
# bash's reserved words: where tree-sitter takes one for a command name, it misread the line.
_RESERVED = frozenset(
    "{ } ( ) [[ ]] ! case do done elif else esac fi for function if in select then until "
    "while".split()
)
# A command substitution left inside a word: tree-sitter did not parse it as one.
_SUBSTITUTION = re.compile(r"(?<!\\)(?:\\\\)*(?:`|\$\()")
_REDIRECT_WRITES = frozenset({">", ">>", "&>", "&>>", ">|", "<>"})
# Wrappers that change what the command they run may do: an allow rule must name them too.
_OPAQUE = frozenset({"sudo", "doas", "su", "runuser", "chroot", "systemd-run"})


class Command(Struct, frozen=True):
    """One simple command: its words unquoted, the name as written (``/bin/rm``)."""

    words: tuple[str, ...]
    wrapper: bool = False  # env, nice, bash -c ...: the command it runs is listed too
    risky_env: bool = False  # run with PATH, LD_PRELOAD, ... set before it

    @property
    def text(self) -> str:
        return shlex.join(self.words)


class Analysis(Struct, frozen=True):
    commands: tuple[Command, ...]
    writes: tuple[str, ...]  # files output redirections write, as written
    unreadable: str | None  # why part of the command cannot be read; None: all of it can


@functools.lru_cache(maxsize=512)
def analyse(command: str) -> Analysis:
    """Every command ``command`` runs, the files it redirects output to, and what could
    not be read (see the module's docstring)."""
    reader = _Reader()
    try:
        reader.script(command, 0)
    except ImportError as exc:
        reader.unreadable(f"the bash parser is not installed ({exc}): {_INSTALL_HINT}")
    except RecursionError:
        reader.unreadable("commands nested too deep to read")
    return Analysis(tuple(reader.commands), tuple(reader.writes), reader.problem)


def command_matches(spec: str, command: Command, *, strict: bool) -> bool:
    """Whether the specifier of a ``Bash(...)`` rule names ``command``.

    ``CMD`` is the command exactly (word by word), ``PREFIX:*`` the words of PREFIX
    followed by any arguments, and a ``*`` any text (``pytest *`` also matches a bare
    ``pytest``). ``strict`` (allow rules) matches the command as written, quoted; else
    (deny and ask) also the name without its folder (``/bin/rm`` -> ``rm``) and the words
    joined without quotes.
    """
    variants = [command.words]
    if not strict and command.words:
        base = os.path.basename(command.words[0]) or command.words[0]
        if base != command.words[0]:
            variants.append((base, *command.words[1:]))
    for words in variants:
        if _words_match(spec, words, strict=strict):
            return True
    return False


def text_matches(spec: str, text: str) -> bool:
    """Whether a rule's specifier matches a whole command line as the user wrote it."""
    if "*" not in spec:
        return " ".join(text.split()) == " ".join(spec.split())
    return _glob(spec).fullmatch(text.strip()) is not None


def _words_match(spec: str, words: Sequence[str], *, strict: bool) -> bool:
    if spec.endswith(":*"):
        prefix = _split(spec[:-2])
        return len(words) >= len(prefix) and list(words[: len(prefix)]) == prefix
    if "*" not in spec:
        return list(words) == _split(spec)
    if spec.endswith(" *") and list(words) == _split(spec[:-2]):
        return True  # "pytest *" also matches a bare "pytest", as Claude Code's rules do
    pattern = _glob(spec)
    forms = [shlex.join(words)]
    if not strict:
        forms.append(" ".join(words))
    return any(pattern.fullmatch(form) is not None for form in forms)


@functools.lru_cache(maxsize=256)
def _glob(spec: str) -> re.Pattern[str]:
    return re.compile(re.escape(spec).replace(r"\*", ".*"), re.S)


def _split(text: str) -> list[str]:
    try:
        return shlex.split(text)
    except ValueError:
        return text.split()


# -- reading the tree ------------------------------------------------------------------


_local = threading.local()  # a tree-sitter Parser is not to be shared between threads


def _parser() -> Any:
    parser = getattr(_local, "parser", None)
    if parser is None:
        import tree_sitter
        import tree_sitter_bash

        parser = _local.parser = tree_sitter.Parser(
            tree_sitter.Language(tree_sitter_bash.language())
        )
    return parser


class _Word(Struct):
    text: str  # unquoted when literal, else the source text
    literal: bool


class _Reader(Struct):
    commands: list[Command] = []
    writes: list[str] = []
    problem: str | None = None

    def unreadable(self, why: str) -> None:
        if self.problem is None:
            self.problem = why

    def script(self, text: str, depth: int) -> None:
        if depth > _MAX_DEPTH:
            self.unreadable("commands nested too deep to read")
            return
        if "\x00" in text:
            self.unreadable("a NUL character")
            return
        try:
            source = text.encode("utf-8", "surrogateescape")
        except UnicodeEncodeError:
            self.unreadable("characters that are not text (lone surrogates)")
            return
        tree = _parser().parse(source)
        joined = _join_continued_lines(source, tree.root_node)
        if joined != source:  # bash joins words split by a backslash-newline; tree-sitter not
            source, tree = joined, _parser().parse(joined)
        if tree.root_node.has_error:
            self.unreadable(f"bash cannot parse {_short(text)!r}")
        self.walk(tree.root_node, depth)

    def walk(self, root: Any, depth: int) -> None:
        stack = [root]  # not recursive: ((((...)))) nests as deep as the line is long
        while stack:
            node = stack.pop()
            kind = node.type
            if kind == "command":
                self.command(node, depth)
            elif kind in ("declaration_command", "unset_command"):
                words = [_word(c) for c in node.children if c.type != "variable_assignment"]
                self.commands.append(Command(tuple(w.text for w in words)))
            elif kind == "file_redirect":
                self.redirect(node)
            elif kind == "variable_assignment":
                self.assignment(node, depth)
            elif kind == "heredoc_body":
                self.here_document(node, depth)
                continue
            elif kind in ("word", "string_content") and _SUBSTITUTION.search(_text(node)):
                self.unreadable(f"a substitution bash runs in {_short(_text(node))!r}")
            stack.extend(reversed(node.children))

    def here_document(self, body: Any, depth: int) -> None:
        """An unquoted here-document is expanded as a double-quoted string is; a quoted
        one (``<<'EOF'``) is text."""
        start = next((c for c in body.parent.children if c.type == "heredoc_start"), None)
        if start is None or any(q in _text(start) for q in "'\"\\"):
            return
        text = _text(body).replace('"', '\\"')
        tree = _parser().parse(f': "{text}"'.encode("utf-8", "surrogateescape"))
        if tree.root_node.has_error:
            self.unreadable("a here-document bash expands")
            return
        for child in tree.root_node.children:
            for argument in child.children_by_field_name("argument"):
                self.walk(argument, depth)

    def redirect(self, node: Any) -> None:
        operator = next((c.type for c in node.children if not c.is_named), "")
        target = node.child_by_field_name("destination")
        if target is None:
            return
        word = _word(target)
        if operator == ">&" or operator == "<&":
            if word.text == "-" or word.text.isdigit() or operator == "<&":
                return  # duplicates or closes a descriptor
        elif operator not in _REDIRECT_WRITES:
            return
        if not word.literal:
            self.unreadable(f"output goes to {word.text!r}, known only when it runs")
        elif word.text not in _HARMLESS_TARGETS and not word.text.startswith("/dev/fd/"):
            self.writes.append(word.text)

    def assignment(self, node: Any, depth: int) -> None:
        """``PAGER='rm V'`` (a command string) is read; ``BASH_ENV=<(...)`` cannot be."""
        name = node.child_by_field_name("name")
        value = node.child_by_field_name("value")
        if name is not None:
            self.variable(_text(name), _word(value) if value is not None else None, depth)

    def variable(self, name: str, value: _Word | None, depth: int) -> None:
        if name in _COMMAND_VARIABLES:
            if value is None or (value.literal and not value.text.strip()):
                return
            if not value.literal:
                self.unreadable(f"{name} runs {value.text!r}, known only when it runs")
            else:
                self.script(value.text, depth + 1)
        elif name in _FILE_VARIABLES and value is not None and not value.literal:
            self.unreadable(f"{name} names {value.text!r}, known only when it runs")

    def command(self, node: Any, depth: int) -> None:
        risky = False
        for child in node.children:
            if child.type == "variable_assignment":
                name = child.child_by_field_name("name")
                if name is not None and _RISKY_ENV.match(_text(name)):
                    risky = True
        name = node.child_by_field_name("name")
        if name is None:
            return
        first = _word(name)
        if not first.literal:
            self.unreadable(f"the command name {first.text!r} is known only when it runs")
            return
        words = [first, *(_word(arg) for arg in node.children_by_field_name("argument"))]
        self.run(words, risky, depth)

    def run(self, words: list[_Word], risky: bool, depth: int) -> None:
        """Record one command (``words[0]`` literal), and what it runs in turn."""
        name = os.path.basename(words[0].text) or words[0].text
        if name in _RESERVED:
            self.unreadable(f"the reserved word {name!r} where a command should be")
            return
        if name == "env":
            for word in words[1:]:
                if "=" in word.text and not word.text.startswith("-"):
                    key, _, value = word.text.partition("=")
                    self.variable(key, _Word(value, word.literal), depth)
                    risky = risky or _RISKY_ENV.match(key) is not None
        unwrap = _WRAPPERS.get(name)
        if name in _SHELLS:
            unwrap = _shell
        inner = unwrap(words) if unwrap is not None else None
        texts = tuple(w.text for w in words)
        if inner is None:
            self.commands.append(Command(texts, risky_env=risky))
            return
        kind, value = inner
        wrapper = kind in ("run", "script") and name not in _OPAQUE
        self.commands.append(Command(texts, wrapper=wrapper, risky_env=risky))
        self.effect(name, inner, risky, depth)

    def effect(self, name: str, inner: Inner, risky: bool, depth: int) -> None:
        """What a program does besides running: the commands it runs, the files it writes."""
        if inner is None:
            return
        kind, value = inner
        if kind == "unreadable":
            self.unreadable(f"{name} runs {value}")
        elif kind == "script":
            self.script(value, depth + 1)
        elif kind == "run":
            self.inner(value, risky, depth)
        elif kind == "also":  # find: commands besides find itself
            for inner_words in value:
                self.inner(inner_words, risky, depth)
        elif kind == "writes":  # files its options or its program write
            self.writes.extend(w for w in value if w not in _HARMLESS_TARGETS)
        elif kind == "many":
            for one in value:
                self.effect(name, one, risky, depth)

    def inner(self, words: list[_Word], risky: bool, depth: int) -> None:
        if not words:
            return
        if not words[0].literal:
            self.unreadable(f"the command name {words[0].text!r} is known only when it runs")
            return
        if depth >= _MAX_DEPTH:
            self.unreadable("commands nested too deep to read")
            return
        self.run(words, risky, depth + 1)


_LITERAL_NODES = frozenset({"raw_string", "ansi_c_string", "comment", "heredoc_body"})


def _join_continued_lines(source: bytes, root: Any) -> bytes:
    """``source`` without the backslash-newlines bash removes (outside quotes, comments
    and here-documents)."""
    if b"\\\n" not in source:
        return source
    drop: list[int] = []
    for match in re.finditer(rb"\\+\n", source):
        if (match.end() - match.start() - 1) % 2 == 0:
            continue  # an escaped backslash, then a newline
        at = match.end() - 2
        node = root.descendant_for_byte_range(at, at + 2)
        while node is not None and node.type not in _LITERAL_NODES:
            node = node.parent
        if node is None:
            drop.append(at)
    if not drop:
        return source
    out = bytearray()
    last = 0
    for at in drop:
        out += source[last:at]
        last = at + 2
    out += source[last:]
    return bytes(out)


def _short(text: str) -> str:
    return text if len(text) <= 60 else text[:57] + "..."


def _text(node: Any) -> str:
    return bytes(node.text).decode("utf-8", "surrogateescape")


def _word(node: Any) -> _Word:
    value = _literal(node)
    return _Word(value, True) if value is not None else _Word(_text(node), False)


def _literal(node: Any) -> str | None:
    """The word bash would see after quote removal, when it has no expansion in it."""
    kind = node.type
    if kind == "word":
        return _unescape_word(_text(node))
    if kind == "number":
        return _text(node)
    if kind == "raw_string":
        return _text(node)[1:-1]
    if kind in ("string", "translated_string"):
        parts: list[str] = []
        for child in node.children:
            if child.type == "string_content":
                parts.append(_unescape_double(_text(child)))
            elif child.is_named:
                return None
        return "".join(parts)
    if kind == "ansi_c_string":
        try:
            return codecs.decode(_text(node)[2:-1], "unicode_escape")
        except (UnicodeDecodeError, ValueError):
            return None
    if kind in ("concatenation", "command_name"):
        values = [_literal(child) for child in node.children]
        return None if any(v is None for v in values) else "".join(v or "" for v in values)
    return None


def _unescape_word(text: str) -> str | None:
    out: list[str] = []
    i = 0
    while i < len(text):
        char = text[i]
        if char == "\\" and i + 1 < len(text):
            if text[i + 1] != "\n":
                out.append(text[i + 1])
            i += 2
            continue
        if char in "*?[$`":
            return None  # a glob or an expansion: the word is known when it runs
        out.append(char)
        i += 1
    if _BRACES.search(text):
        return None  # {a,b} and {1..3} become several words
    return "".join(out)


_BRACES = re.compile(r"\{[^{}]*(,|\.\.)[^{}]*\}")


def _unescape_double(text: str) -> str:
    return re.sub(r"\\([\\\"$`\n])", lambda m: "" if m.group(1) == "\n" else m.group(1), text)


# -- wrappers ----------------------------------------------------------------------------
# Each takes the words of a command and returns what it runs: ("run", words),
# ("script", text), ("also", [words, ...]) (commands besides itself), ("unreadable",
# why), or None (it runs nothing else).

Inner = tuple[str, Any] | None


def _options(
    words: Sequence[_Word],
    start: int,
    with_arg: str = "",
    long_with_arg: frozenset[str] = frozenset(),
) -> int | None:
    """The index of the first word after the options (None: an option is not literal)."""
    i = start
    while i < len(words):
        word = words[i]
        if not word.literal:
            return None if word.text.startswith("-") or word.text.startswith("$") else i
        text = word.text
        if text == "--":
            return i + 1
        if not text.startswith("-") or text == "-":
            return i
        if text.startswith("--"):
            i += 2 if "=" not in text and text[2:] in long_with_arg else 1
            continue
        i += 1
        for j, letter in enumerate(text[1:], start=2):
            if letter in with_arg:
                if j == len(text):
                    i += 1  # the argument is the next word
                break
    return i


def _rest(words: Sequence[_Word], start: int | None) -> Inner:
    if start is None:
        return "unreadable", "a command given by an option known only when it runs"
    return ("run", list(words[start:])) if start < len(words) else None


def _simple(with_arg: str = "", long_with_arg: frozenset[str] = frozenset()) -> Any:
    def unwrap(words: Sequence[_Word]) -> Inner:
        return _rest(words, _options(words, 1, with_arg, long_with_arg))

    return unwrap


def _command(words: Sequence[_Word]) -> Inner:
    if any(w.text in ("-v", "-V", "-pv", "-vp") for w in words[1:2]):
        return None  # describes the command, does not run it
    return _rest(words, _options(words, 1))


def _env(words: Sequence[_Word]) -> Inner:
    i = 1
    while i < len(words):
        text = words[i].text
        if not words[i].literal:
            if text.startswith("-"):
                return "unreadable", f"the option {text!r}"
            break
        if text in ("-S", "--split-string") and i + 1 < len(words):
            rest = words[i + 1 :]
            if not all(w.literal for w in rest):
                return "unreadable", "a split string known only when it runs"
            return "script", " ".join(w.text for w in rest)
        if text.startswith("--split-string=") or (text.startswith("-S") and len(text) > 2):
            head = text.split("=", 1)[1] if "=" in text else text[2:]
            return "script", " ".join([head, *(w.text for w in words[i + 1 :])])
        if text == "--":
            i += 1
            continue
        if text.startswith("-") and text != "-":
            takes = text in ("-u", "-C", "-P", "--unset", "--chdir")
            i += 2 if takes else 1
            continue
        if "=" in text and not text.startswith("="):
            i += 1  # NAME=VALUE
            continue
        break
    return _rest(words, i)


def _timeout(words: Sequence[_Word]) -> Inner:
    start = _options(words, 1, "sk", frozenset({"signal", "kill-after"}))
    if start is None:
        return _rest(words, None)
    return _rest(words, start + 1)  # the duration


def _xargs(words: Sequence[_Word]) -> Inner:
    long_args = frozenset(
        {"arg-file", "delimiter", "eof", "replace", "max-lines", "max-args", "max-procs"}
        | {"max-chars", "process-slot-var"}
    )
    start = _options(words, 1, "adEILnPs", long_args)
    if start is not None and start >= len(words):
        return "run", [_Word("echo", True)]  # xargs runs echo when given no command
    return _rest(words, start)


def _sudo(words: Sequence[_Word]) -> Inner:
    start = _options(
        words,
        1,
        "ugCDhprtUT",
        frozenset({"user", "group", "close-from", "chdir", "host", "prompt", "role", "type"})
        | frozenset({"other-user", "command-timeout"}),
    )
    if start is not None and start >= len(words):
        if any(w.text in ("-s", "-i", "--shell", "--login") for w in words[1:]):
            return "unreadable", "a shell reading its commands from its input"
        return None
    return _rest(words, start)


def _shell(words: Sequence[_Word]) -> Inner:
    """``bash -c STRING``: the string; ``bash`` reading its input: unreadable; ``bash
    FILE``: a script, nothing more to read here (the command itself is matched)."""
    i, string = 1, False
    while i < len(words):
        word = words[i]
        if not word.literal:
            if word.text.startswith(("-", "+", "$")):
                return "unreadable", f"the option {word.text!r}"
            break
        text = word.text
        if text in ("--", "-"):
            i += 1
            break
        if text.startswith("--"):
            i += 2 if text in ("--rcfile", "--init-file") else 1
            continue
        if text.startswith(("-", "+")) and len(text) > 1:
            letters = text[1:]
            string = string or "c" in letters
            i += 2 if ("o" in letters or "O" in letters) else 1
            if "s" in letters and text.startswith("-"):
                return "unreadable", "commands from its input"
            continue
        break
    if string:
        if i >= len(words):
            return "unreadable", "-c without a command string"
        if not words[i].literal:
            return "unreadable", f"the command string {words[i].text!r}, known only when it runs"
        return "script", words[i].text
    if i >= len(words):
        return "unreadable", "commands from its input"
    if not words[i].literal or words[i].text.startswith(_FDS):
        return "unreadable", f"commands from {words[i].text!r}"
    return None


def _source(words: Sequence[_Word]) -> Inner:
    """``source FILE``: a script (the command is matched); from a substitution or the
    input it cannot be read."""
    if len(words) < 2:
        return None
    file = words[1]
    if not file.literal or file.text in ("-", "/dev/stdin") or file.text.startswith(_FDS):
        return "unreadable", f"commands from {file.text!r}"
    return None


_FDS = ("/dev/fd/", "/proc/self/fd/", "/dev/stdin")


def _su(words: Sequence[_Word]) -> Inner:
    for i, word in enumerate(words[1:], start=1):
        if word.text in ("-c", "--command") or word.text.startswith("--command="):
            if "=" in word.text:
                return "script", word.text.split("=", 1)[1]
            if i + 1 >= len(words) or not words[i + 1].literal:
                return "unreadable", "a command string known only when it runs"
            return "script", words[i + 1].text
    return None


def _eval(words: Sequence[_Word]) -> Inner:
    if len(words) == 1:
        return None
    if not all(w.literal for w in words[1:]):
        return "unreadable", "a string known only when it runs"
    return "script", " ".join(w.text for w in words[1:])


def _watch(words: Sequence[_Word]) -> Inner:
    start = _options(words, 1, "nqd", frozenset({"interval", "differences"}))
    if start is None or not all(w.literal for w in words[start:]):
        return "unreadable", "a command known only when it runs"
    return ("script", " ".join(w.text for w in words[start:])) if start < len(words) else None


def _trap(words: Sequence[_Word]) -> Inner:
    if len(words) < 3 or words[1].text.startswith("-"):
        return None
    if not words[1].literal:
        return "unreadable", "a command known only when it runs"
    return "script", words[1].text


def _alias(words: Sequence[_Word]) -> Inner:
    texts = []
    for word in words[1:]:
        if "=" in word.text:
            if not word.literal:
                return "unreadable", "an alias known only when it runs"
            texts.append(word.text.split("=", 1)[1])
    return ("script", "\n".join(texts)) if texts else None


def _find(words: Sequence[_Word]) -> Inner:
    inner: list[list[_Word]] = []
    starts: list[_Word] = []
    i = 1
    while i < len(words) and not words[i].text.startswith(("-", "(", "!")):
        starts.append(words[i])
        i += 1
    while i < len(words):
        text = words[i].text
        if text in ("-exec", "-execdir", "-ok", "-okdir"):
            end = i + 1
            while end < len(words) and words[end].text not in (";", "+"):
                end += 1
            inner.append(list(words[i + 1 : end]))
            i = end + 1
            continue
        if text == "-delete":
            inner.append([_Word("rm", True), _Word("-rf", True), *(starts or [_Word(".", True)])])
        i += 1
    effects: list[Inner] = [("also", inner)] if inner else []
    written = _find_writes(words)
    if written:
        if not all(w.literal for w in words if w.text in written):
            return "unreadable", "find writes a file known only when it runs"
        effects.append(("writes", written))
    return ("many", effects) if effects else None


# -- programs whose options or program text run a command or write a file -----------------


def _option_value(words: Sequence[_Word], i: int, short: str, long: str) -> tuple[str, int] | None:
    """The value of option ``short`` (``-o X``, ``-oX``) or ``long`` (``--output=X``,
    ``--output X``) at ``words[i]``, and the index after it; None when it is not that option."""
    text = words[i].text
    if long and text.startswith(long + "="):
        return text[len(long) + 1 :], i + 1
    if (long and text == long) or (short and text == short):
        return (words[i + 1].text, i + 2) if i + 1 < len(words) else ("", i + 1)
    if short and text.startswith(short) and not text.startswith("--") and len(text) > len(short):
        return text[len(short) :], i + 1
    return None


def _literal_all(words: Sequence[_Word]) -> bool:
    return all(w.literal for w in words)


# git's configuration keys whose value is a command it runs (``!`` marks a shell
# command in an alias or a credential helper)
_GIT_COMMAND_KEYS = re.compile(
    r"^(core\.(fsmonitor|pager|editor|sshcommand|askpass|hookspath)|sequence\.editor"
    r"|diff\.external|gpg\.(\w+\.)?program|interactive\.difffilter|pager\..+"
    r"|(filter|diff|merge)\..+\.(clean|smudge|process|textconv|command|driver)"
    r"|credential(\..+)?\.helper|uploadpack\.packobjectshook|ssh\.variant|alias\..+)$",
    re.IGNORECASE,
)
_GIT_WRITE_OPTIONS = ("--output", "-o")
_GIT_WRITERS = frozenset({"log", "diff", "show", "format-patch", "archive", "whatchanged"})


def _git(words: Sequence[_Word]) -> Inner:
    """``git -c KEY=VALUE ...``: a command-bearing key's value is run; ``--config-env`` and
    ``--exec-path=DIR`` (a folder of programs git runs) cannot be read; ``--output`` /
    ``-o`` of log, diff, show, format-patch and archive write a file."""
    effects: list[Inner] = []
    i = 1
    subcommand = None
    while i < len(words):
        word = words[i]
        text = word.text
        if not word.literal and text.startswith("-"):
            return "unreadable", f"the option {text!r}"
        if text == "-c" or (text.startswith("-c") and "=" in text and len(text) > 2):
            setting = (
                text[2:] if len(text) > 2 else (words[i + 1].text if i + 1 < len(words) else "")
            )
            literal = word.literal and (
                len(text) > 2 or (i + 1 < len(words) and words[i + 1].literal)
            )
            i += 1 if len(text) > 2 else 2
            key, _, value = setting.partition("=")
            if _GIT_COMMAND_KEYS.match(key.strip()):
                if not literal:
                    return "unreadable", f"git's {key} set to a value known only when it runs"
                effects.append(_git_value(key.strip().lower(), value))
            continue
        if text.startswith("--config-env") or text.startswith("--exec-path="):
            return "unreadable", f"{text.split('=')[0]} (commands from the environment or a folder)"
        if text in ("-C", "--git-dir", "--work-tree", "--namespace", "--super-prefix"):
            i += 2
            continue
        if text.startswith("-"):
            i += 1
            continue
        subcommand = text
        break
    if subcommand in _GIT_WRITERS:
        for j in range(i + 1, len(words)):
            for option in _GIT_WRITE_OPTIONS:
                if option == "-o" and subcommand not in ("format-patch", "archive"):
                    continue
                found = _option_value(
                    words, j, "-o" if option == "-o" else "", option if option != "-o" else ""
                )
                if found is not None:
                    target, _ = found
                    if not words[j].literal:
                        return (
                            "unreadable",
                            f"git writes {words[j].text!r}, known only when it runs",
                        )
                    effects.append(("writes", [target or "."]))
    if not effects:
        return None
    return "many", effects


def _git_value(key: str, value: str) -> Inner:
    if key.startswith("alias."):
        if value.startswith("!"):
            return "script", value[1:]
        return "run", [_Word("git", True), *(_Word(w, True) for w in _split(value))]
    if key.endswith(".helper") and not value.startswith("!") and "/" not in value:
        return "run", [_Word(f"git-credential-{value.split()[0]}" if value else "git", True)]
    if key == "core.hookspath":
        return "unreadable", f"git's hooks from the folder {value!r}"
    return "script", value[1:] if value.startswith("!") else value


_TAR_SCRIPTS = (
    "--to-command",
    "--use-compress-program",
    "--rsh-command",
    "--info-script",
    "--new-volume-script",
)


def _tar(words: Sequence[_Word]) -> Inner:
    """tar's command options (``--to-command``, ``-I`` / ``--use-compress-program``,
    ``--checkpoint-action=exec=``, ``--rsh-command``, ``-F`` / ``--info-script``) are run;
    the archive ``-f`` it creates, and the folder it extracts into, are written."""
    effects: list[Inner] = []
    creating = extracting = False
    archive: str | None = None
    directory = "."
    for i, word in enumerate(words[1:], start=1):
        text = word.text
        if not word.literal and text.startswith("-"):
            return "unreadable", f"the option {text!r}"
        letters = text[1:] if text.startswith("-") and not text.startswith("--") else ""
        if i == 1 and not text.startswith("-"):
            letters = text  # tar's old style: ``tar cf X``
        creating = creating or "c" in letters or text in ("--create", "--append", "--update")
        creating = creating or any(ch in letters for ch in "ru")
        extracting = extracting or "x" in letters or text in ("--extract", "--get")
        for option in _TAR_SCRIPTS:
            if text.startswith(option + "="):
                effects.append(("script", text.split("=", 1)[1]))
        if text in _TAR_SCRIPTS or text in ("-I", "-F"):
            if i + 1 < len(words):
                nxt = words[i + 1]
                if not nxt.literal:
                    return "unreadable", f"{text} {nxt.text!r}, known only when it runs"
                effects.append(("script", nxt.text))
        elif text.startswith("-I") and len(text) > 2 and not text.startswith("--"):
            effects.append(("script", text[2:]))
        if text.startswith("--checkpoint-action="):
            action = text.split("=", 1)[1]
            if action.startswith("exec="):
                effects.append(("script", action[len("exec=") :]))
        if text.startswith("--file="):
            archive = text.split("=", 1)[1]
        elif text == "--file" or (letters and "f" in letters and not text.startswith("--")):
            if i + 1 < len(words):
                archive = words[i + 1].text
        if text in ("-C", "--directory") and i + 1 < len(words):
            directory = words[i + 1].text
        elif text.startswith("--directory="):
            directory = text.split("=", 1)[1]
    if creating and archive and archive != "-":
        effects.append(("writes", [archive]))
    if extracting:
        effects.append(("writes", [directory]))
    return ("many", effects) if effects else None


def _flock(words: Sequence[_Word]) -> Inner:
    """``flock [options] LOCKFILE COMMAND...`` or ``flock LOCKFILE -c STRING``: the lock
    file is written (created), the command run."""
    i = 1
    while i < len(words) and words[i].text.startswith("-"):
        text = words[i].text
        if text in ("-w", "--timeout", "-E", "--conflict-exit-code"):
            i += 2
            continue
        i += 1
    if i >= len(words):
        return None
    lock = words[i]
    effects: list[Inner] = [] if lock.text.isdigit() else [("writes", [lock.text])]
    rest = words[i + 1 :]
    if rest and rest[0].text in ("-c", "--command"):
        if len(rest) < 2 or not rest[1].literal:
            return "unreadable", "a command string known only when it runs"
        effects.append(("script", rest[1].text))
    elif rest:
        effects.append(("run", list(rest)))
    return "many", effects


def _script_program(words: Sequence[_Word]) -> Inner:
    """``script [-c CMD] [FILE]``: CMD is run (else a shell reading its input), FILE
    (default ``typescript``) is written."""
    effects: list[Inner] = []
    command: str | None = None
    files: list[str] = []
    i = 1
    while i < len(words):
        text = words[i].text
        if text in ("-c", "--command"):
            if i + 1 >= len(words) or not words[i + 1].literal:
                return "unreadable", "a command string known only when it runs"
            command = words[i + 1].text
            i += 2
            continue
        if text.startswith("--command="):
            command = text.split("=", 1)[1]
        elif text.startswith("-") and "c" in text[1:] and not text.startswith("--"):
            if i + 1 >= len(words) or not words[i + 1].literal:
                return "unreadable", "a command string known only when it runs"
            command = words[i + 1].text
            i += 2
            continue
        elif text in ("-t", "-T", "-I", "-O", "-B", "-E", "-o", "-m"):
            i += 2
            continue
        elif not text.startswith("-"):
            files.append(text)
        i += 1
    if command is None:
        return "unreadable", "a shell reading its commands from its input"
    effects.append(("script", command))
    effects.append(("writes", files or ["typescript"]))
    return "many", effects


def _runuser(words: Sequence[_Word]) -> Inner:
    """``runuser -u USER [--] CMD...`` or ``runuser [-] USER -c STRING``."""
    i = 1
    user_given = False
    while i < len(words):
        text = words[i].text
        if text in ("-c", "--command"):
            if i + 1 >= len(words) or not words[i + 1].literal:
                return "unreadable", "a command string known only when it runs"
            return "script", words[i + 1].text
        if text.startswith("--command="):
            return "script", text.split("=", 1)[1]
        if text == "--":
            return _rest(words, i + 1)
        if text in ("-u", "--user"):
            user_given = True
            i += 2
            continue
        if text in (
            "-g",
            "--group",
            "-G",
            "--supp-group",
            "-s",
            "--shell",
            "-w",
            "--whitelist-environment",
        ):
            i += 2
            continue
        if text.startswith("-"):
            i += 1
            continue
        if user_given:
            return _rest(words, i)
        i += 1  # the user of ``runuser USER``
    return "unreadable", "a shell reading its commands from its input"


def _chroot(words: Sequence[_Word]) -> Inner:
    """``chroot [options] NEWROOT [CMD...]`` (no CMD: an interactive shell)."""
    i = 1
    while i < len(words) and words[i].text.startswith("-"):
        i += 2 if words[i].text in ("--userspec", "--groups") else 1
    if i + 1 >= len(words):
        return "unreadable", "a shell reading its commands from its input"
    return "run", list(words[i + 1 :])


_SYSTEMD_RUN_ARGS = frozenset(
    "-p --property -u --unit --description --slice -E --setenv --uid --gid --nice -M "
    "--machine -H --host --working-directory -d --on-active --on-boot --on-startup "
    "--on-unit-active --on-unit-inactive --on-calendar --on-timezone-change "
    "--on-clock-change --timer-property --path-property --socket-property --service-type "
    "--slice-inherit --expand-environment".split()
)


def _systemd_run(words: Sequence[_Word]) -> Inner:
    i = 1
    while i < len(words) and words[i].text.startswith("-"):
        text = words[i].text
        if text == "--":
            i += 1
            break
        i += 2 if text in _SYSTEMD_RUN_ARGS else 1
    return _rest(words, i)


def _sort(words: Sequence[_Word]) -> Inner:
    """``sort -o FILE`` / ``--output=FILE`` writes FILE."""
    for i in range(1, len(words)):
        found = _option_value(words, i, "-o", "--output")
        if found is not None:
            if not words[i].literal or (
                words[i].text in ("-o", "--output")
                and i + 1 < len(words)
                and not words[i + 1].literal
            ):
                return "unreadable", "sort writes a file known only when it runs"
            return "writes", [found[0]]
    return None


def _sed(words: Sequence[_Word]) -> Inner:
    """sed's ``e`` command and ``s///e`` run commands, ``w`` / ``W`` and ``s///w`` write
    files, ``-i`` writes the files it edits; a script from ``-f`` cannot be read."""
    scripts: list[str] = []
    files: list[str] = []
    in_place = False
    given = False
    i = 1
    while i < len(words):
        word = words[i]
        text = word.text
        if text in ("-e", "--expression"):
            if i + 1 >= len(words) or not words[i + 1].literal:
                return "unreadable", "a sed script known only when it runs"
            scripts.append(words[i + 1].text)
            given = True
            i += 2
            continue
        if text.startswith("--expression="):
            scripts.append(text.split("=", 1)[1])
            given = True
        elif text in ("-f", "--file") or text.startswith("--file="):
            return "unreadable", "a sed script read from a file"
        elif text.startswith("-i") or text.startswith("--in-place"):
            in_place = True
        elif text in ("-l", "--line-length"):
            i += 2
            continue
        elif text.startswith("-") and text != "-":
            if not word.literal:
                return "unreadable", f"the option {text!r}"
            letters = text[1:] if not text.startswith("--") else ""
            if "e" in letters or "f" in letters:
                return "unreadable", f"the option {text!r}"
            in_place = in_place or "i" in letters
        elif not given:
            if not word.literal:
                return "unreadable", "a sed script known only when it runs"
            scripts.append(text)
            given = True
        else:
            files.append(text)
        i += 1
    effects: list[Inner] = []
    for script in scripts:
        effects += _sed_script(script)
    if in_place:
        effects.append(("writes", files or ["."]))
    return ("many", effects) if effects else None


def _sed_script(script: str) -> list[Inner]:
    effects: list[Inner] = []
    text = script
    i, n = 0, len(text)

    def rest_of_line(at: int) -> tuple[str, int]:
        end = text.find("\n", at)
        end = n if end < 0 else end
        return text[at:end].strip(), end

    def delimited(at: int, delim: str) -> int:
        """The index after the closing ``delim`` of a part that starts at ``at``."""
        while at < n:
            if text[at] == "\\":
                at += 2
                continue
            if text[at] == delim:
                return at + 1
            at += 1
        return n

    while i < n:
        ch = text[i]
        if ch in " \t\n;{}!":
            i += 1
            continue
        if ch == "#":
            _, i = rest_of_line(i)
            continue
        if ch.isdigit() or ch in "$,~+":
            i += 1
            continue
        if ch == "/" or (ch == "\\" and i + 1 < n):  # an address /re/ or \cREc
            delim = "/" if ch == "/" else text[i + 1]
            i = delimited(i + (1 if ch == "/" else 2), delim)
            while i < n and text[i] in "IM":
                i += 1
            continue
        if ch in "aic:btTvrR":  # text, a label or a file read: to the end of the line
            _, i = rest_of_line(i + 1)
            continue
        if ch == "e":
            command, i = rest_of_line(i + 1)
            effects.append(
                ("script", command)
                if command
                else ("unreadable", "the text it edits as a command (sed e)")
            )
            continue
        if ch in "wW":
            target, i = rest_of_line(i + 1)
            effects.append(("writes", [target or "."]))
            continue
        if ch in "sy":
            if i + 1 >= n:
                break
            delim = text[i + 1]
            i = delimited(i + 2, delim)
            i = delimited(i, delim)
            if ch == "s":
                while i < n and text[i] not in ";\n}":
                    if text[i] == "e":
                        effects.append(("unreadable", "the text it edits as a command (s///e)"))
                    if text[i] == "w":
                        target, i = rest_of_line(i + 1)
                        effects.append(("writes", [target or "."]))
                        break
                    i += 1
            continue
        i += 1
    return effects


_AWK_STRING = re.compile(r'"((?:[^"\\]|\\.)*)"')


def _awk(words: Sequence[_Word]) -> Inner:
    """awk's ``system(...)``, pipes to and from commands (``print | "cmd"``, ``"cmd" |
    getline``) run commands, ``print > "file"`` writes one, gawk's ``-i inplace`` writes the
    files it edits; a program from ``-f`` cannot be read."""
    program: str | None = None
    files: list[str] = []
    in_place = False
    i = 1
    while i < len(words):
        word = words[i]
        text = word.text
        if text in ("-f", "--file") or text.startswith("--file=") or text in ("-E", "--exec"):
            return "unreadable", "an awk program read from a file"
        if text in ("-v", "-F", "--assign", "--field-separator"):
            i += 2
            continue
        if text in ("-i", "--include") or text.startswith("-i"):
            value = (
                words[i + 1].text
                if text in ("-i", "--include") and i + 1 < len(words)
                else text[2:]
            )
            in_place = in_place or value == "inplace"
            i += 2 if text in ("-i", "--include") else 1
            continue
        if text in ("-e", "--source"):
            if i + 1 >= len(words) or not words[i + 1].literal:
                return "unreadable", "an awk program known only when it runs"
            program = (program or "") + "\n" + words[i + 1].text
            i += 2
            continue
        if text.startswith("-") and text != "-" and program is None:
            i += 1
            continue
        if program is None:
            if not word.literal:
                return "unreadable", "an awk program known only when it runs"
            program = text
        else:
            files.append(text)
        i += 1
    effects: list[Inner] = []
    if program:
        effects += _awk_program(program)
    if in_place:
        effects.append(("writes", files or ["."]))
    return ("many", effects) if effects else None


def _awk_program(program: str) -> list[Inner]:
    effects: list[Inner] = []
    # the string literals, blanked, so operators inside them are not read as operators
    bare = _AWK_STRING.sub(lambda m: '"' + " " * len(m.group(1)) + '"', program)
    for match in re.finditer(r"\bsystem\s*\(", bare):
        argument = re.match(r'\s*"((?:[^"\\]|\\.)*)"\s*\)', program[match.end() :])
        if argument is None:
            effects.append(("unreadable", "system() with a command known only when it runs"))
        else:
            effects.append(("script", _awk_unescape(argument.group(1))))
    for match in re.finditer(r"\|&?", bare):
        before = re.search(r'"((?:[^"\\]|\\.)*)"\s*$', program[: match.start()])
        after = re.match(r'\s*"((?:[^"\\]|\\.)*)"', program[match.end() :])
        if match.group(0) == "|" and match.end() < len(bare) and bare[match.end()] == "|":
            continue
        if match.start() > 0 and bare[match.start() - 1] == "|":
            continue  # the second bar of ||
        if after is not None and re.match(r"\s*getline", program[match.end() :]) is None:
            effects.append(("script", _awk_unescape(after.group(1))))
        elif before is not None:
            effects.append(("script", _awk_unescape(before.group(1))))
        else:
            effects.append(("unreadable", "a pipe to or from a command known only when it runs"))
    for match in re.finditer(r"\bprintf?\b[^;\n}]*?(>>?)", bare):
        target = re.match(r'\s*"((?:[^"\\]|\\.)*)"', program[match.end() :])
        if target is None:
            effects.append(("unreadable", "print writes a file known only when it runs"))
        elif target.group(1) not in ("/dev/stdout", "/dev/stderr", "-"):
            effects.append(("writes", [_awk_unescape(target.group(1))]))
    return effects


def _awk_unescape(text: str) -> str:
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t"}.get(m.group(1), m.group(1)), text)


def _find_writes(words: Sequence[_Word]) -> list[str]:
    """The files ``find -fprint FILE`` / ``-fprint0`` / ``-fprintf FILE FMT`` / ``-fls``
    write."""
    out = []
    for i, word in enumerate(words):
        if word.text in ("-fprint", "-fprint0", "-fprintf", "-fls") and i + 1 < len(words):
            out.append(words[i + 1].text)
    return out


_WRAPPERS: dict[str, Any] = {
    "env": _env,
    "command": _command,
    "builtin": _simple(),
    "exec": _simple("a"),
    "nice": _simple("n", frozenset({"adjustment"})),
    "time": _simple("fo", frozenset({"format", "output"})),
    "nohup": _simple(),
    "setsid": _simple(),
    "stdbuf": _simple("ioe", frozenset({"input", "output", "error"})),
    "ionice": _simple("cnp", frozenset({"class", "classdata", "pid"})),
    "coproc": _simple(),
    "timeout": _timeout,
    "xargs": _xargs,
    "sudo": _sudo,
    "doas": _simple("uC"),
    "su": _su,
    "source": _source,
    ".": _source,
    "busybox": _simple(),
    "eval": _eval,
    "watch": _watch,
    "trap": _trap,
    "alias": _alias,
    "find": _find,
    "git": _git,
    "tar": _tar,
    "flock": _flock,
    "script": _script_program,
    "runuser": _runuser,
    "chroot": _chroot,
    "systemd-run": _systemd_run,
    "sort": _sort,
    "sed": _sed,
    "gsed": _sed,
    "awk": _awk,
    "gawk": _awk,
    "mawk": _awk,
    "nawk": _awk,
}
