"""Hostile spec input: generated YAML documents, mutations of the example specs, and
the classic attacks, through the spec loader, the compiler and ``harnessc check``.

Never a traceback; every rejected document has at least one error diagnostic with a
location (path, line >= 1, col >= 1); every accepted one compiles to valid Python.
"""

from __future__ import annotations

import ast
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harnessc.compiler import compile as compile_specs
from harnessc.spec import LoadedSpec, export_schema, load_spec, parse_spec
from tests.timing import scaled

REPO = Path(__file__).resolve().parents[2]
AGENTS = REPO / "agents"
EXAMPLES = {p.name: p.read_bytes() for p in sorted(AGENTS.glob("*.yaml"))}
FAKE = AGENTS / "fuzzed.yaml"  # relative paths in fuzzed specs resolve beside the examples

COUNTS: dict[str, int] = {}


def _keys() -> list[str]:
    names: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            props = node.get("properties")
            if isinstance(props, dict):
                names.update(props)
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(json.loads(export_schema()))
    return sorted(names)


SPEC_KEYS = _keys()


def check_outcome(loaded: LoadedSpec, kind: str) -> None:
    """The contract every document must meet; compiles the accepted ones."""
    COUNTS[kind] = COUNTS.get(kind, 0) + 1
    for d in loaded.diagnostics:
        # the spec itself, or a file it names (a sub-agent's Claude Code file beside it)
        assert d.path == loaded.display_path or d.path.startswith("agents/"), d
        assert d.line >= 1 and d.col >= 1, d
        assert d.severity in ("error", "warning")
        assert d.message and "Traceback" not in d.message, d
        assert d.format().startswith(f"{d.path}:{d.line}:{d.col}: ")
    if loaded.spec is None:
        assert any(d.severity == "error" for d in loaded.diagnostics), loaded.raw[:300]
        return
    modules = compile_specs(loaded, REPO / "generated")
    for text in modules.values():
        ast.parse(text)


def run_doc(raw: bytes, kind: str) -> None:
    check_outcome(parse_spec(raw, FAKE, "agents/fuzzed.yaml"), kind)


def fuzz(examples: int) -> settings:
    return settings(
        max_examples=examples,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=list(HealthCheck),
    )


# -- 1. YAML-flavoured text --------------------------------------------------------

YAML_BITS = [
    "\n",
    "  ",
    "- ",
    ": ",
    "{",
    "}",
    "[",
    "]",
    ",",
    "&a ",
    "*a",
    "<<: ",
    "!!",
    "!tag ",
    "'",
    '"',
    "|\n",
    ">-\n",
    "#",
    "%YAML 1.2\n",
    "---\n",
    "...\n",
    "?",
    "@",
    "`",
    "\t",
    "\\",
    "${X}",
    "${X:-y}",
    "~",
    "null",
    "true",
    "0x1F",
    "1e309",
    ".nan",
    "-.inf",
    "version: 1\n",
    "name: a\n",
    "models:\n",
    "  main: {provider: openai, id: m}\n",
    "tools: [bash, read]\n",
    "hooks:\n",
    "\ufeff",
    "\x00",
    "\u2028",
    "é",
]


@fuzz(1500)
@given(st.lists(st.one_of(st.sampled_from(YAML_BITS), st.text(max_size=6)), max_size=40))
def test_fuzz_yaml_text(parts: list[str]) -> None:
    run_doc("".join(parts).encode("utf-8", "surrogatepass"), "yaml text")


# -- 2. structured documents with the spec's own vocabulary --------------------------
# Hypothesis draws a seed; a plain Random builds the document from it (drawing every
# node through Hypothesis costs ~15 ms a document, this well under 1 ms).

SCALAR_WORDS = ["openai", "anthropic", "google", "bash", "read", "main", "jsonl", "1", ".", ""]
ODD_TEXT = [
    "",
    " ",
    "\n",
    "é✓😀",
    "${X}",
    "${X:-y}",
    "'",
    '"',
    "\\",
    "{{ x }}",
    "\x00",
    "\u2028",
    "a" * 300,
]


def _scalar(rng: random.Random) -> Any:
    pick = rng.randrange(9)
    if pick == 0:
        return None
    if pick == 1:
        return rng.random() < 0.5
    if pick == 2:
        return rng.choice([0, 1, -1, 2**31, 2**63, -(2**70), rng.randrange(-1000, 100_000)])
    if pick == 3:
        return rng.choice(
            [0.5, -0.0, 1e308, float("inf"), float("-inf"), float("nan"), rng.random()]
        )
    if pick in (4, 5):
        return rng.choice(SCALAR_WORDS)
    if pick == 6:
        return rng.choice(ODD_TEXT)
    return "".join(
        chr(rng.choice([rng.randrange(32, 127), rng.randrange(0x80, 0x3000)]))
        for _ in range(rng.randrange(8))
    )


def _key(rng: random.Random) -> str:
    return rng.choice(SPEC_KEYS) if rng.random() < 0.85 else str(_scalar(rng))


def _value(rng: random.Random, depth: int = 0) -> Any:
    roll = rng.random()
    if depth >= 4 or roll < 0.5:
        return _scalar(rng)
    if roll < 0.7:
        return [_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    return {_key(rng): _value(rng, depth + 1) for _ in range(rng.randrange(5))}


def random_document(rng: random.Random) -> Any:
    if rng.random() < 0.3:
        return (
            _value(rng)
            if rng.random() < 0.2
            else {_key(rng): _value(rng) for _ in range(rng.randrange(10))}
        )
    doc: dict[str, Any] = {
        "version": rng.choice([1, 1, 1, 2, "1", None]),
        "name": rng.choice(["fz", "fz_2", "Fz-1", "a b", "", "class", "x" * 80, _scalar(rng)]),
        "models": (
            {
                "main": {
                    "provider": rng.choice(["openai", "anthropic", "google", "x"]),
                    "id": rng.choice(["m", _scalar(rng)]),
                }
            }
            if rng.random() < 0.8
            else _value(rng)
        ),
    }
    for key in (
        "tools",
        "hooks",
        "budget",
        "stream",
        "session",
        "system_prompt",
        "extensions",
        "model",
        "resources",
    ):
        if rng.random() < 0.3:
            doc[key] = _value(rng)
    if rng.random() < 0.5:
        doc["tools"] = [
            rng.choice(
                [
                    "bash",
                    "read",
                    "write",
                    "edit",
                    "ls",
                    "grep",
                    "find",
                    "todo",
                    "finish",
                    _value(rng),
                ]
            )
            for _ in range(rng.randrange(4))
        ]
    return doc


def dump(doc: Any) -> bytes:
    return yaml.dump(doc, Dumper=_DUMPER, allow_unicode=True).encode("utf-8", "surrogatepass")


_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
SEEDS = st.integers(min_value=0, max_value=2**63)


@fuzz(1500)
@given(SEEDS)
def test_fuzz_structured_documents(seed: int) -> None:
    run_doc(dump(random_document(random.Random(seed))), "structured")


# -- 3. text mutations of the example specs ------------------------------------------


@st.composite
def text_mutations(draw: st.DrawFn) -> bytes:
    name = draw(st.sampled_from(sorted(EXAMPLES)))
    lines = EXAMPLES[name].decode().split("\n")
    for _ in range(draw(st.integers(1, 4))):
        if not lines:
            break
        at = draw(st.integers(0, len(lines) - 1))
        op = draw(
            st.sampled_from(["del", "dup", "indent", "dedent", "char", "insert", "swap", "cut"])
        )
        line = lines[at]
        if op == "del":
            del lines[at]
        elif op == "dup":
            lines.insert(at, line)
        elif op == "indent":
            lines[at] = "  " + line
        elif op == "dedent":
            lines[at] = line.lstrip()
        elif op == "char" and line:
            pos = draw(st.integers(0, len(line) - 1))
            lines[at] = (
                line[:pos] + draw(st.sampled_from(YAML_BITS + ["x", "0", " "])) + line[pos + 1 :]
            )
        elif op == "insert":
            lines.insert(at, draw(st.sampled_from(YAML_BITS)) + draw(st.text(max_size=10)))
        elif op == "swap":
            other = draw(st.integers(0, len(lines) - 1))
            lines[at], lines[other] = lines[other], lines[at]
        elif op == "cut":
            lines = lines[:at] + [line[: len(line) // 2]]
    return "\n".join(lines).encode("utf-8", "surrogatepass")


@fuzz(1500)
@given(text_mutations())
def test_fuzz_example_text_mutations(raw: bytes) -> None:
    run_doc(raw, "text mutation")


# -- 4. data mutations of the example specs ------------------------------------------

PARSED = {name: yaml.safe_load(raw) for name, raw in EXAMPLES.items()}


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(node, dict):
        for key, value in node.items():
            out += _paths(value, (*prefix, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            out += _paths(value, (*prefix, index))
    return out


def mutate_data(rng: random.Random) -> Any:
    doc = json.loads(json.dumps(PARSED[rng.choice(sorted(PARSED))]))
    for _ in range(rng.randrange(1, 4)):
        paths = _paths(doc)[1:]
        if not paths:
            break
        path = rng.choice(paths)
        parent = doc
        for step in path[:-1]:
            parent = parent[step]
        last = path[-1]
        op = rng.choice(["set", "set", "delete", "add", "wrap"])
        if op == "set":
            parent[last] = _value(rng, 2)
        elif op == "delete":
            del parent[last]
        elif op == "add" and isinstance(parent, dict):
            parent[_key(rng)] = _value(rng, 2)
        elif op == "wrap":
            parent[last] = [parent[last]] if rng.random() < 0.5 else {_key(rng): parent[last]}
    return doc


@fuzz(1000)
@given(SEEDS)
def test_fuzz_example_data_mutations(seed: int) -> None:
    run_doc(dump(mutate_data(random.Random(seed))), "data mutation")


def test_fuzz_count_reaches_5000() -> None:
    """Runs after the fuzz tests above (file order): at least 5,000 documents went through."""
    total = sum(COUNTS.values())
    print(f"\nspec fuzz: {total} documents {COUNTS}")
    if len(COUNTS) == 4:  # the whole module ran (not a -k selection)
        assert total >= 5000, COUNTS


# -- the classic attacks ---------------------------------------------------------------

BILLION_LAUGHS = b"""\
a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]
version: 1
name: laughs
models: {main: {provider: openai, id: m}}
"""

DEEP_FLOW = b"version: 1\nname: deep\nx: " + b"[" * 50_000 + b"]" * 50_000 + b"\n"
DEEP_BLOCK = b"version: 1\nname: deep\n" + b"".join(b"  " * i + b"k:\n" for i in range(2000))

TAGS = {
    "python-object-apply": b'version: 1\nname: t\nx: !!python/object/apply:os.system ["touch {marker}"]\n',
    "python-object-new": b"version: 1\nname: t\nx: !!python/object/new:os.system [touch {marker}]\n",
    "python-name": b"version: 1\nname: !!python/name:os.system\n",
    "python-module": b"version: 1\nname: t\nx: !!python/module:os\n",
    "custom-tag": b"version: 1\nname: !include /etc/passwd\n",
    "set-tag": b"version: 1\nname: t\nx: !!set {a, b}\n",
    "binary-tag": b"version: 1\nname: t\nx: !!binary aGVsbG8=\n",
    "timestamp-tag": b"version: 1\nname: t\nx: !!timestamp 2001-12-14\n",
    "tag-directive": b"%TAG !e! tag:yaml.org,2002:python/object/apply:\n---\nx: !e!os.system [touch {marker}]\n",
}


def test_billion_laughs_rejected_quickly() -> None:
    started = time.monotonic()
    loaded = parse_spec(BILLION_LAUGHS, FAKE, "laughs.yaml")
    elapsed = time.monotonic() - started
    assert loaded.spec is None
    assert any("expands to more than" in d.message for d in loaded.diagnostics), loaded.diagnostics
    assert elapsed < scaled(3.0), f"{elapsed:.2f} s"


@pytest.mark.parametrize("raw", [DEEP_FLOW, DEEP_BLOCK], ids=["flow", "block"])
def test_deep_nesting_rejected_quickly(raw: bytes) -> None:
    started = time.monotonic()
    loaded = parse_spec(raw, FAKE, "deep.yaml")
    assert time.monotonic() - started < scaled(2.0)
    assert loaded.spec is None
    check_outcome(loaded, "attack")


@pytest.mark.parametrize("name", list(TAGS))
def test_object_constructing_tags_rejected(name: str, tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    raw = TAGS[name].replace(b"{marker}", str(marker).encode())
    loaded = parse_spec(raw, FAKE, "tags.yaml")
    assert loaded.spec is None
    assert any(d.severity == "error" for d in loaded.diagnostics)
    check_outcome(loaded, "attack")
    assert not marker.exists()


def test_50_mb_spec_rejected_with_a_size_error(tmp_path: Path) -> None:
    big = tmp_path / "big.yaml"
    with big.open("wb") as fh:
        fh.write(b"version: 1\nname: big\nsystem_prompt: |\n")
        line = b"  " + b"x" * 1022 + b"\n"
        fh.write(line * (50 * 1024))
    assert big.stat().st_size > 50 * 1024 * 1024
    started = time.monotonic()
    loaded = load_spec(big, "big.yaml")
    assert time.monotonic() - started < scaled(2.0)
    assert loaded.spec is None
    (diagnostic,) = loaded.diagnostics
    assert "larger than" in diagnostic.message and (diagnostic.line, diagnostic.col) == (1, 1)


# -- a few through the real command line -------------------------------------------------


def test_harnessc_check_cli_on_hostile_files(tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    files = {
        "laughs.yaml": BILLION_LAUGHS,
        "tag.yaml": TAGS["python-object-apply"].replace(b"{marker}", str(marker).encode()),
        "deep.yaml": DEEP_FLOW,
        "binary.yaml": bytes(range(256)) * 4,
        "empty.yaml": b"",
        "list.yaml": b"- 1\n- 2\n",
        "bad-utf8.yaml": b"version: 1\nname: \xff\xfe\n",
        "mutated.yaml": EXAMPLES["coder.yaml"].replace(b"models:", b"models: [", 1),
    }
    big = tmp_path / "big.yaml"
    with big.open("wb") as fh:
        fh.write(b"x" * (50 * 1024 * 1024 + 10))
    paths = [big]
    for name, raw in files.items():
        (tmp_path / name).write_bytes(raw)
        paths.append(tmp_path / name)
    env = dict(os.environ, HARNESSC_DEBUG="")
    env.pop("HARNESSC_DEBUG")
    proc = subprocess.run(
        [sys.executable, "-c", "from harnessc.cli import main; main()", "check", *map(str, paths)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
        env=env,
    )
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout
    assert "internal error" not in proc.stderr
    for path in paths:
        located = [
            line
            for line in proc.stderr.splitlines()
            if line.startswith(f"{path}:") and ": error: " in line
        ]
        assert located, f"no located error for {path.name}:\n{proc.stderr}"
    assert "larger than" in proc.stderr
    assert not marker.exists()
