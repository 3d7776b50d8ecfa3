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

from harnessc.runtime.support.records import NEW_LIST, Record

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
_OPAQUE = frozenset({"sudo", "doas", "su"})


class Command(Record, frozen=True):
    """One simple command: its words unquoted, the name as written (``/bin/rm``)."""

    __slots__ = ("words", "wrapper", "risky_env")
    words: tuple[str, ...]
    wrapper: bool  # env, nice, bash -c ...: the command it runs is listed too
    risky_env: bool  # run with PATH, LD_PRELOAD, ... set before it

    def __init__(
        self, words: tuple[str, ...], wrapper: bool = False, risky_env: bool = False
    ) -> None:
        object.__setattr__(self, "words", words)
        object.__setattr__(self, "wrapper", wrapper)
        object.__setattr__(self, "risky_env", risky_env)

    @property
    def text(self) -> str:
        return shlex.join(self.words)


class Analysis(Record, frozen=True):
    __slots__ = ("commands", "writes", "unreadable")
    commands: tuple[Command, ...]
    writes: tuple[str, ...]  # files output redirections write, as written
    unreadable: str | None  # why part of the command cannot be read; None: all of it can

    def __init__(
        self, commands: tuple[Command, ...], writes: tuple[str, ...], unreadable: str | None
    ) -> None:
        object.__setattr__(self, "commands", commands)
        object.__setattr__(self, "writes", writes)
        object.__setattr__(self, "unreadable", unreadable)


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


class _Word(Record):
    __slots__ = ("text", "literal")
    text: str  # unquoted when literal, else the source text
    literal: bool

    def __init__(self, text: str, literal: bool) -> None:
        self.text = text
        self.literal = literal


class _Reader(Record):
    __slots__ = ("commands", "writes", "problem")
    commands: list[Command]
    writes: list[str]
    problem: str | None

    def __init__(
        self,
        commands: list[Command] = NEW_LIST,
        writes: list[str] = NEW_LIST,
        problem: str | None = None,
    ) -> None:
        self.commands = [] if commands is NEW_LIST else commands
        self.writes = [] if writes is NEW_LIST else writes
        self.problem = problem

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
        if kind == "unreadable":
            self.unreadable(f"{name} runs {value}")
        elif kind == "script":
            self.script(value, depth + 1)
        elif kind == "run":
            self.inner(value, risky, depth)
        elif kind == "also":  # find: commands besides find itself
            for inner_words in value:
                self.inner(inner_words, risky, depth)

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
    return ("also", inner) if inner else None


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
}
