"""The located YAML loader: safe scalars, positions, duplicate keys, tags and caps."""

from __future__ import annotations

from harnessc.spec.yamlsource import MAX_BYTES, Mark, load_yaml


def messages(text: str | bytes) -> list[str]:
    raw = text.encode() if isinstance(text, str) else text
    return [f"{d.line}:{d.col}: {d.message}" for d in load_yaml(raw, "x.yaml").diagnostics]


def test_core_schema_scalars_only() -> None:
    data = load_yaml(
        b"a: on\nb: no\nc: 12:30\nd: 2024-01-01\ne: true\nf: 0x1F\ng: 1_000\nh: .5\ni: .\nj: ~\n",
        "x.yaml",
    ).data
    assert data == {
        "a": "on",
        "b": "no",
        "c": "12:30",
        "d": "2024-01-01",
        "e": True,
        "f": 31,
        "g": 1000,
        "h": 0.5,
        "i": ".",
        "j": None,
    }


def test_positions_of_keys_and_values() -> None:
    source = load_yaml(b"models:\n  main:\n    id: x\ntools: [read, bash]\n", "x.yaml")
    assert source.keys[("models", "main", "id")] == Mark(3, 5)
    assert source.values[("models", "main", "id")] == Mark(3, 9)
    assert source.values[("tools", 1)] == Mark(4, 15)
    # An unknown path falls back to its closest known ancestor.
    assert source.mark(("models", "main", "nope")) == Mark(3, 5)


def test_duplicate_keys_are_errors_and_the_first_value_stays() -> None:
    source = load_yaml(b"a: 1\nb: 2\na: 3\n", "x.yaml")
    assert source.data == {"a": 1, "b": 2}
    assert messages("a: 1\nb: 2\na: 3\n") == ["3:1: duplicate key 'a' (first defined at line 1)"]


def test_merge_keys_work_and_explicit_keys_win() -> None:
    text = "base: &b {provider: openai, id: x}\nm: {<<: *b, id: y}\n"
    assert load_yaml(text.encode(), "x.yaml").data["m"] == {"id": "y", "provider": "openai"}


def test_object_tags_are_rejected_and_nothing_runs() -> None:
    text = "a: !!python/object/apply:os.system [touch /tmp/harnessc-pwned]\nb: !!binary aGk=\n"
    assert messages(text) == [
        "1:4: unsupported YAML tag '!!python/object/apply:os.system'",
        "2:4: unsupported YAML tag '!!binary'",
    ]


def test_non_string_keys_are_rejected() -> None:
    assert messages("1: a\ntrue: b\n") == [
        "1:1: mapping keys must be strings; quote '1' as '1'",
        "2:1: mapping keys must be strings; quote 'true' as 'true'",
    ]


def test_alias_expansion_is_capped() -> None:
    rows = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, 9):
        prev, name = chr(96 + i), chr(97 + i)
        rows.append(f"{name}: &{name} [" + ",".join([f"*{prev}"] * 9) + "]")
    assert messages("\n".join(rows)) == [
        "1:1: document expands to more than 50000 nodes (alias expansion); refusing to load it"
    ]


def test_recursive_alias_is_an_error() -> None:
    assert messages("a: &x [1, *x]\n") == ["1:4: recursive alias: a node contains itself"]


def test_size_cap() -> None:
    assert messages(b"#" * (MAX_BYTES + 1)) == ["1:1: file is larger than 10 MB"]


def test_deep_nesting_is_an_error_not_a_crash() -> None:
    assert messages("a: " + "[" * 5000) == ["1:260: YAML nesting is deeper than 256 levels"]
    assert messages("a: " + "[" * 80 + "]" * 80)[0].endswith("nesting is deeper than 64 levels")


def test_encoding_and_syntax_errors_are_located() -> None:
    assert messages(b"a: 1\nb: \xff\n") == ["2:4: file is not valid UTF-8"]
    assert messages("a: 1\n---\nb: 2\n") == [
        "2:1: YAML syntax error: found another document (expected a single document in the stream)"
    ]
    assert messages("a: {b: ${X}}\n")[0].endswith("quote values holding ${...} inside [ ] or { }")


def test_empty_document() -> None:
    source = load_yaml(b"# only a comment\n", "x.yaml")
    assert source.data is None and source.diagnostics == []
