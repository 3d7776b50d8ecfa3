from __future__ import annotations

import base64

from harnessc.runtime.core.messages import ImageContent
from harnessc.runtime.tools import create_read_tool

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)


def test_reads_with_line_numbers(ws, run_tool, txt):
    root, ctx = ws
    (root / "a.txt").write_text("alpha\nbeta\ngamma\n")
    result = run_tool(create_read_tool(), {"path": "a.txt"}, ctx)
    assert not result.is_error
    assert txt(result) == "     1\talpha\n     2\tbeta\n     3\tgamma"
    assert result.details["total_lines"] == 3


def test_offset_and_limit_with_continue_notice(ws, run_tool, txt):
    root, ctx = ws
    (root / "n.txt").write_text("".join(f"line {i}\n" for i in range(1, 21)))
    result = run_tool(create_read_tool(), {"path": "n.txt", "offset": 5, "limit": 3}, ctx)
    text = txt(result)
    assert text.startswith("     5\tline 5\n     6\tline 6\n     7\tline 7")
    assert "13 more lines" in text and "offset=8" in text


def test_big_file_capped_at_2000_lines(ws, run_tool, txt):
    root, ctx = ws
    (root / "big.txt").write_text("".join(f"{i}\n" for i in range(1, 5001)))
    result = run_tool(create_read_tool(), {"path": "big.txt"}, ctx)
    text = txt(result)
    assert "  2000\t2000" in text and "  2001\t" not in text
    assert "Showing lines 1-2000 of 5000" in text and "offset=2001" in text
    again = run_tool(create_read_tool(), {"path": "big.txt", "offset": 4999}, ctx)
    assert txt(again) == "  4999\t4999\n  5000\t5000"


def test_byte_cap(ws, run_tool, txt):
    root, ctx = ws
    (root / "wide.txt").write_text("".join("x" * 1000 + "\n" for _ in range(200)))
    text = txt(run_tool(create_read_tool(), {"path": "wide.txt"}, ctx))
    assert len(text.encode()) <= 51 * 1024
    assert "50.0 KB limit" in text and "Use offset=" in text


def test_single_huge_line(ws, run_tool, txt):
    root, ctx = ws
    (root / "one.txt").write_text("y" * 100_000)
    result = run_tool(create_read_tool(), {"path": "one.txt"}, ctx)
    assert "alone is over" in txt(result) and "sed -n '1p'" in txt(result)


def test_image(ws, run_tool, txt):
    root, ctx = ws
    (root / "dot.png").write_bytes(PNG)
    result = run_tool(create_read_tool(), {"path": "dot.png"}, ctx)
    assert not result.is_error
    image = result.content[1]
    assert isinstance(image, ImageContent)
    assert image.mime_type == "image/png" and base64.b64decode(image.data) == PNG


def test_failures(ws, run_tool, txt):
    root, ctx = ws
    (root / "bin.dat").write_bytes(b"\x00\x01\x02binary")
    (root / "sub").mkdir()
    (root / "s.txt").write_text("one\n")
    tool = create_read_tool()
    missing = run_tool(tool, {"path": "nope.txt"}, ctx)
    assert missing.is_error and "File not found: nope.txt" in txt(missing)
    binary = run_tool(tool, {"path": "bin.dat"}, ctx)
    assert binary.is_error and "binary file" in txt(binary)
    folder = run_tool(tool, {"path": "sub"}, ctx)
    assert folder.is_error and "directory" in txt(folder)
    beyond = run_tool(tool, {"path": "s.txt", "offset": 9}, ctx)
    assert beyond.is_error and "beyond the end" in txt(beyond)
    empty = run_tool(tool, {"path": ""}, ctx)
    assert empty.is_error


def test_empty_file(ws, run_tool, txt):
    root, ctx = ws
    (root / "e.txt").write_text("")
    assert "empty" in txt(run_tool(create_read_tool(), {"path": "e.txt"}, ctx))


def test_cwd_without_workspace(tmp_path, run_tool, txt):
    (tmp_path / "c.txt").write_text("hi\n")
    result = run_tool(create_read_tool(), {"path": "c.txt"}, {"cwd": str(tmp_path)})
    assert txt(result) == "     1\thi"
