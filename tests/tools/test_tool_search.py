from __future__ import annotations

from harnessc.runtime.tools import create_find_tool, create_grep_tool, create_ls_tool
from harnessc.runtime.tools.walk import glob_matches


def _tree(root):
    files = {
        "src/app.py": "import os\n\ndef main():\n    print('hello')\n    return 0\n",
        "src/util/helpers.py": "def helper():\n    return 'Hello'\n",
        "src/util/data.json": '{"hello": 1}\n',
        "README.md": "# Hello project\n",
        ".hidden": "hello hidden\n",
        ".git/config": "hello from git\n",
        "node_modules/pkg/index.js": "hello from node\n",
    }
    for rel, body in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(body)
    (root / "src/blob.bin").write_bytes(b"hello\x00\x01binary")


def test_ls(ws, run_tool, txt):
    root, ctx = ws
    _tree(root)
    assert txt(run_tool(create_ls_tool(), {}, ctx)).splitlines() == [
        ".git/",
        ".hidden",
        "node_modules/",
        "README.md",
        "src/",
    ]
    assert txt(run_tool(create_ls_tool(), {"path": "src/util"}, ctx)).splitlines() == [
        "data.json",
        "helpers.py",
    ]


def test_ls_limit_and_errors(ws, run_tool, txt):
    root, ctx = ws
    for i in range(12):
        (root / f"f{i:02}.txt").write_text("")
    result = run_tool(create_ls_tool(), {"limit": 5}, ctx)
    lines = txt(result).splitlines()
    assert lines[:5] == ["f00.txt", "f01.txt", "f02.txt", "f03.txt", "f04.txt"]
    assert "[5 entries limit reached (12 in all). Use limit=10 to see more.]" in txt(result)
    assert run_tool(create_ls_tool(), {"path": "missing"}, ctx).is_error
    assert run_tool(create_ls_tool(), {"path": "f00.txt"}, ctx).is_error
    (root / "empty").mkdir()
    assert txt(run_tool(create_ls_tool(), {"path": "empty"}, ctx)) == "(empty folder)"


def test_grep_regex_skips_git_node_modules_binary(ws, run_tool, txt):
    root, ctx = ws
    _tree(root)
    result = run_tool(create_grep_tool(), {"pattern": "hel+o"}, ctx)
    lines = txt(result).splitlines()
    assert lines == [
        ".hidden:1: hello hidden",
        "src/app.py:4:     print('hello')",
        'src/util/data.json:1: {"hello": 1}',
    ]
    assert result.details["matches"] == 3


def test_grep_options(ws, run_tool, txt):
    root, ctx = ws
    _tree(root)
    tool = create_grep_tool()
    ci = txt(run_tool(tool, {"pattern": "hello", "ignore_case": True, "glob": "*.py"}, ctx))
    assert ci.splitlines() == [
        "src/app.py:4:     print('hello')",
        "src/util/helpers.py:2:     return 'Hello'",
    ]
    lit = txt(run_tool(tool, {"pattern": "print(", "literal": True}, ctx))
    assert lit == "src/app.py:4:     print('hello')"
    sub = txt(run_tool(tool, {"pattern": "def", "path": "src/util"}, ctx))
    assert sub == "helpers.py:1: def helper():"
    one = txt(run_tool(tool, {"pattern": "def", "path": "src/app.py"}, ctx))
    assert one == "src/app.py:3: def main():"
    path_glob = txt(run_tool(tool, {"pattern": "def", "glob": "src/**/*.py"}, ctx))
    assert path_glob.count("def") == 2


def test_grep_context(ws, run_tool, txt):
    root, ctx = ws
    (root / "c.txt").write_text("a\nb\nMATCH1\nc\nd\ne\nf\nMATCH2\ng\n")
    out = txt(run_tool(create_grep_tool(), {"pattern": "MATCH", "context": 1}, ctx))
    assert out.splitlines() == [
        "c.txt-2- b",
        "c.txt:3: MATCH1",
        "c.txt-4- c",
        "--",
        "c.txt-7- f",
        "c.txt:8: MATCH2",
        "c.txt-9- g",
    ]


def test_grep_limit_and_errors(ws, run_tool, txt):
    root, ctx = ws
    (root / "many.txt").write_text("hit\n" * 250)
    result = run_tool(create_grep_tool(), {"pattern": "hit"}, ctx)
    assert txt(result).count("many.txt:") == 100
    assert "[100 matches limit reached. Use limit=200 for more" in txt(result)
    small = run_tool(create_grep_tool(), {"pattern": "hit", "limit": 3}, ctx)
    assert txt(small).count("many.txt:") == 3
    bad = run_tool(create_grep_tool(), {"pattern": "("}, ctx)
    assert bad.is_error and "literal=true" in txt(bad)
    none = run_tool(create_grep_tool(), {"pattern": "zzz"}, ctx)
    assert not none.is_error and "No matches" in txt(none)
    assert run_tool(create_grep_tool(), {"pattern": "x", "path": "nope"}, ctx).is_error


def test_grep_output_cap_and_long_lines(ws, run_tool, txt):
    root, ctx = ws
    (root / "wide.txt").write_text(("x" * 2000 + "\n") * 150)
    result = run_tool(create_grep_tool(), {"pattern": "x", "limit": 1000}, ctx)
    text = txt(result)
    assert "... [line truncated]" in text
    assert len(text.encode()) < 52 * 1024
    many = root / "m"
    many.mkdir()
    (many / "m.txt").write_text("y\n" * 3000)
    capped = txt(run_tool(create_grep_tool(), {"pattern": "y", "path": "m", "limit": 5000}, ctx))
    assert "[Output truncated at 50 KB / 2000 lines" in capped


def test_find(ws, run_tool, txt):
    root, ctx = ws
    _tree(root)
    tool = create_find_tool()
    assert txt(run_tool(tool, {"pattern": "*.py"}, ctx)).splitlines() == [
        "src/app.py",
        "src/util/helpers.py",
    ]
    assert txt(run_tool(tool, {"pattern": "util"}, ctx)) == "src/util/"
    assert txt(run_tool(tool, {"pattern": "src/*.py"}, ctx)) == "src/app.py"
    assert txt(run_tool(tool, {"pattern": "*.{json,md}"}, ctx)).splitlines() == [
        "README.md",
        "src/util/data.json",
    ]
    assert "config" not in txt(run_tool(tool, {"pattern": "*"}, ctx))
    assert txt(run_tool(tool, {"pattern": "*.py", "path": "src/util"}, ctx)) == "helpers.py"
    assert "No files found" in txt(run_tool(tool, {"pattern": "*.rs"}, ctx))
    assert run_tool(tool, {"pattern": "*", "path": "nope"}, ctx).is_error


def test_find_limit(ws, run_tool, txt):
    root, ctx = ws
    for i in range(30):
        (root / f"f{i:02}.log").write_text("")
    result = run_tool(create_find_tool(), {"pattern": "*.log", "limit": 10}, ctx)
    assert len(txt(result).split("\n\n")[0].splitlines()) == 10
    assert "[10 results limit reached. Use limit=20 for more" in txt(result)


def test_glob_matcher():
    assert glob_matches("*.py", "a/b/c.py")
    assert not glob_matches("*.py", "a/b/c.pyc")
    assert glob_matches("src/**/*.py", "src/a.py")
    assert glob_matches("src/**/*.py", "src/x/y/a.py")
    assert not glob_matches("src/*.py", "src/x/a.py")
    assert glob_matches("**/test_*.py", "tests/unit/test_a.py")
    assert glob_matches("file?.[ch]", "dir/file1.c")
    assert not glob_matches("file[!0-9].c", "file1.c")
    assert glob_matches("./src/*.ts", "src/a.ts")
