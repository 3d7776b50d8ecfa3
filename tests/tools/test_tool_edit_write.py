from __future__ import annotations

import asyncio
import os
import stat

from harnessc.runtime.core.signal import AbortSignal
from harnessc.runtime.tools import create_edit_tool, create_write_tool


def test_write_creates_parents(ws, run_tool, txt):
    root, ctx = ws
    result = run_tool(create_write_tool(), {"path": "a/b/c.txt", "content": "hello\n"}, ctx)
    assert not result.is_error and "Created a/b/c.txt (6 bytes)" in txt(result)
    assert (root / "a/b/c.txt").read_text() == "hello\n"
    again = run_tool(create_write_tool(), {"path": "a/b/c.txt", "content": "bye"}, ctx)
    assert "Overwrote" in txt(again) and (root / "a/b/c.txt").read_text() == "bye"
    assert [p.name for p in (root / "a/b").iterdir()] == ["c.txt"]  # no temp files left


def test_write_keeps_mode_and_refuses_folder(ws, run_tool):
    root, ctx = ws
    script = root / "run.sh"
    script.write_text("old")
    script.chmod(0o755)
    run_tool(create_write_tool(), {"path": "run.sh", "content": "new"}, ctx)
    assert stat.S_IMODE(script.stat().st_mode) == 0o755
    (root / "dir").mkdir()
    assert run_tool(create_write_tool(), {"path": "dir", "content": "x"}, ctx).is_error


def test_write_is_atomic_rename(ws, run_tool):
    root, ctx = ws
    target = root / "f.txt"
    target.write_text("old")
    before = os.stat(target).st_ino
    run_tool(create_write_tool(), {"path": "f.txt", "content": "new"}, ctx)
    assert os.stat(target).st_ino != before  # replaced by rename, not rewritten in place


def test_edit_several_replacements(ws, run_tool, txt):
    root, ctx = ws
    f = root / "code.py"
    f.write_text("def a():\n    return 1\n\n\ndef b():\n    return 2\n")
    result = run_tool(
        create_edit_tool(),
        {
            "path": "code.py",
            "edits": [
                {"old_text": "return 1", "new_text": "return 10"},
                {"old_text": "def b():\n    return 2", "new_text": "def b():\n    return 20"},
            ],
        },
        ctx,
    )
    assert not result.is_error, txt(result)
    assert f.read_text() == "def a():\n    return 10\n\n\ndef b():\n    return 20\n"
    assert "Applied 2 edits to code.py" in txt(result)
    assert "-    return 1\n+    return 10" in result.details["diff"]
    assert result.details["first_changed_line"] == 1


def test_edit_not_found_names_the_text(ws, run_tool, txt):
    root, ctx = ws
    f = root / "t.txt"
    f.write_text("one\ntwo\n")
    result = run_tool(
        create_edit_tool(),
        {
            "path": "t.txt",
            "edits": [
                {"old_text": "one", "new_text": "1"},
                {"old_text": "three", "new_text": "3"},
            ],
        },
        ctx,
    )
    assert result.is_error
    assert "edit 2: old_text was not found in t.txt" in txt(result) and "three" in txt(result)
    assert f.read_text() == "one\ntwo\n"  # all or nothing


def test_edit_ambiguous(ws, run_tool, txt):
    root, ctx = ws
    (root / "t.txt").write_text("x = 1\ny = 2\nx = 1\n")
    result = run_tool(
        create_edit_tool(),
        {"path": "t.txt", "edits": [{"old_text": "x = 1", "new_text": "x"}]},
        ctx,
    )
    assert result.is_error
    assert "not unique" in txt(result) and "lines 1, 3" in txt(result) and "x = 1" in txt(result)


def test_edit_overlap_and_empty_and_noop(ws, run_tool, txt):
    root, ctx = ws
    (root / "t.txt").write_text("abcdef\n")
    tool = create_edit_tool()
    overlap = run_tool(
        tool,
        {
            "path": "t.txt",
            "edits": [{"old_text": "abcd", "new_text": "X"}, {"old_text": "cdef", "new_text": "Y"}],
        },
        ctx,
    )
    assert overlap.is_error and "edits 1 and 2 overlap" in txt(overlap)
    empty = run_tool(tool, {"path": "t.txt", "edits": [{"old_text": "", "new_text": "Y"}]}, ctx)
    assert empty.is_error and "empty" in txt(empty)
    same = run_tool(tool, {"path": "t.txt", "edits": [{"old_text": "abc", "new_text": "abc"}]}, ctx)
    assert same.is_error and "No changes" in txt(same)


def test_edit_missing_and_binary(ws, run_tool, txt):
    root, ctx = ws
    (root / "b.bin").write_bytes(b"ab\x00cd")
    tool = create_edit_tool()
    missing = run_tool(tool, {"path": "no.txt", "edits": [{"old_text": "a", "new_text": "b"}]}, ctx)
    assert missing.is_error and "File not found" in txt(missing)
    binary = run_tool(tool, {"path": "b.bin", "edits": [{"old_text": "ab", "new_text": "x"}]}, ctx)
    assert binary.is_error and "binary" in txt(binary)


def test_edit_reads_fresh_content(ws, run_tool, txt):
    root, ctx = ws
    f = root / "t.txt"
    f.write_text("first\n")
    tool = create_edit_tool()
    f.write_text("changed behind our back\n")
    result = run_tool(
        tool, {"path": "t.txt", "edits": [{"old_text": "first", "new_text": "x"}]}, ctx
    )
    assert result.is_error and "Read the file again" in txt(result)


def test_edit_keeps_crlf_and_bom(ws, run_tool):
    root, ctx = ws
    f = root / "w.txt"
    f.write_bytes("\ufeffone\r\ntwo\r\n".encode())
    run_tool(
        create_edit_tool(),
        {"path": "w.txt", "edits": [{"old_text": "one\ntwo", "new_text": "uno\ndos"}]},
        ctx,
    )
    assert f.read_bytes() == "\ufeffuno\r\ndos\r\n".encode()


def test_parallel_edits_of_one_file_do_not_lose_updates(ws):
    root, ctx = ws
    f = root / "many.txt"
    f.write_text("".join(f"line{i}\n" for i in range(30)))
    tool = create_edit_tool()

    async def go():
        calls = [
            tool.execute(
                str(i),
                {"path": "many.txt", "edits": [{"old_text": f"line{i}\n", "new_text": f"L{i}\n"}]},
                AbortSignal(),
                lambda r: None,
                ctx,
            )
            for i in range(30)
        ]
        return await asyncio.gather(*calls)

    results = asyncio.run(go())
    assert not any(r.is_error for r in results)
    assert f.read_text() == "".join(f"L{i}\n" for i in range(30))
