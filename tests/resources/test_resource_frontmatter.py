from __future__ import annotations

import pytest

from harnessc.runtime.resources import parse_frontmatter


def test_no_frontmatter():
    fm = parse_frontmatter("# Title\n\nbody\n")
    assert (
        fm.data == {} and fm.body == "# Title\n\nbody\n" and fm.error is None and fm.form == "none"
    )


def test_seed_000_json_form():
    text = (
        '{\n"name": "file-ops",\n"description": "Handle file system operations",\n'
        '"disable-model-invocation": false\n}\n---\n# File Operations Skill\nbody\n'
    )
    fm = parse_frontmatter(text)
    assert fm.form == "json" and fm.error is None
    assert fm.data == {
        "name": "file-ops",
        "description": "Handle file system operations",
        "disable-model-invocation": False,
    }
    assert fm.body == "# File Operations Skill\nbody\n"


def test_json_errors():
    bad = parse_frontmatter('{"name": "x",}\n---\nbody')
    assert bad.error and bad.error.startswith("JSON frontmatter:") and "line 1" in bad.error
    notobj = parse_frontmatter("{}\n---\n")
    assert notobj.error is None and notobj.data == {}
    # a body starting with "{" and no closing --- is just a body
    assert parse_frontmatter("{not frontmatter}\ntext").data == {}


YAML_CASES = [
    ("name: my-skill", {"name": "my-skill"}),
    ('description: "quoted: with colon"', {"description": "quoted: with colon"}),
    ("description: 'it''s single'", {"description": "it's single"}),
    ('description: "tab\\tand \\u00e9"', {"description": "tab\tand \u00e9"}),
    ("description: Use when: the user asks", {"description": "Use when: the user asks"}),
    ("description: value # a comment", {"description": "value"}),
    ("flag: true\nother: False", {"flag": True, "other": False}),
    ("nothing:\nempty: ~", {"nothing": None, "empty": None}),
    ("n: 42\nf: 1.5\nneg: -3", {"n": 42, "f": 1.5, "neg": -3}),
    ("version: '1.0'", {"version": "1.0"}),
    ("tags: [a, 'b c', 3]", {"tags": ["a", "b c", 3]}),
    ("meta: {author: me, v: 2}", {"meta": {"author": "me", "v": 2}}),
    ("items:\n  - one\n  - 'two'\n", {"items": ["one", "two"]}),
    ("items:\n- one\n- two", {"items": ["one", "two"]}),
    ('metadata:\n  author: me\n  version: "1.0"', {"metadata": {"author": "me", "version": "1.0"}}),
    (
        "description: |\n  line one\n  line two\nname: x",
        {"description": "line one\nline two\n", "name": "x"},
    ),
    ("description: |-\n  keep\n\n  para\n", {"description": "keep\n\npara"}),
    ("description: >\n  folded\n  text\n\n  next\n", {"description": "folded text\nnext\n"}),
    ("description: >-\n  a\n  b", {"description": "a b"}),
    ("description: |+\n  keep\n\n", {"description": "keep\n\n\n"}),
    (
        "description: a plain\n  scalar that continues",
        {"description": "a plain scalar that continues"},
    ),
    (
        'description: "a quoted\n  string that continues"',
        {"description": "a quoted string that continues"},
    ),
    ("# comment line\nname: x\n\n", {"name": "x"}),
    ("disable-model-invocation: true", {"disable-model-invocation": True}),
    ('"quoted key": v', {"quoted key": "v"}),
]


@pytest.mark.parametrize(("yaml", "expected"), YAML_CASES)
def test_yaml_subset(yaml, expected):
    fm = parse_frontmatter(f"---\n{yaml}\n---\nBody text\n")
    assert fm.error is None, fm.error
    assert fm.data == expected
    assert fm.body == "Body text\n"


# What the old hand-written subset refused and PyYAML's safe loader reads (issue 14):
# nested maps and lists as block YAML, anchors and aliases, standard tags.
NESTED_CASES = [
    (
        "name: x\nmetadata:\n  tags:\n    - pdf\n    - forms\n  owner:\n    team: docs\n",
        {"name": "x", "metadata": {"tags": ["pdf", "forms"], "owner": {"team": "docs"}}},
    ),
    ("items:\n  - key: v\n    n: 2\n", {"items": [{"key": "v", "n": 2}]}),
    ("flow: [a, [b, c]]", {"flow": ["a", ["b", "c"]]}),
    ("base: &b {x: 1}\ncopy: *b", {"base": {"x": 1}, "copy": {"x": 1}}),
    ("tagged: !!str 12", {"tagged": "12"}),
    ("on: yes\nwhen: 2024-01-02\nhex: 0x1f", {"on": "yes", "when": "2024-01-02", "hex": 31}),
]


@pytest.mark.parametrize(("yaml", "expected"), NESTED_CASES)
def test_nested_yaml_loads(yaml, expected):
    fm = parse_frontmatter(f"---\n{yaml}\n---\nBody\n")
    assert fm.error is None, fm.error
    assert fm.data == expected


YAML_ERRORS = [
    ("name: x\nname: y", "line 3: duplicate key 'name'"),
    ("name: x\n  indented: y", "line 3:"),
    ("- a\n- b", "frontmatter is a list, not a mapping"),
    ("just text", "frontmatter is a str, not a mapping"),
    ("description: 'open", "line 2: a quoted string is not closed"),
    ("alias: *a", "line 2: found undefined alias"),
    ("tagged: !!python/object:os.system x", "could not determine a constructor"),
    ("flow: [a, b", "line 2: a [ list is not closed"),
    ("x:\n\t- a", "line 3:"),
    ("a: &x [1]\n" + "\n".join(f"k{i}: *x" for i in range(101)), "more than 100 aliases"),
]


@pytest.mark.parametrize(("yaml", "message"), YAML_ERRORS)
def test_yaml_errors(yaml, message):
    fm = parse_frontmatter(f"---\n{yaml}\n---\nbody")
    assert fm.error is not None and message in fm.error, fm.error


def test_unclosed_yaml_and_crlf_and_bom():
    assert "never closed" in (parse_frontmatter("---\nname: x\nbody").error or "")
    fm = parse_frontmatter("\ufeff---\r\nname: x\r\n---\r\nbody\r\n")
    assert fm.data == {"name": "x"} and fm.body == "body\n"
    dots = parse_frontmatter("---\nname: x\n...\nbody")
    assert dots.data == {"name": "x"} and dots.body == "body"
