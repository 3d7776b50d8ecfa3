"""A generated agent's command line: prompt words alone are read without argparse, as
argparse reads them; anything else is argparse's (``cli.args.read_command_line``)."""

from __future__ import annotations

import pytest

from harnessc.runtime.cli.args import read_command_line
from harnessc.runtime.cli.parser import build_parser

PROMPT_WORDS = (
    [],
    ["hi"],
    ["review", "this:", "-"],
    ["-"],
    ["", "two words", "a=b", "x-y", "@file"],
)

WITH_FLAGS = (
    ["--json", "hi"],
    ["hi", "-c"],
    ["--", "-x"],
    ["-1"],
    ["--max-turns", "4", "--approve", "call_1", "--approve", "call_2"],
    ["--serve", "--port", "0"],
)


@pytest.mark.parametrize("argv", PROMPT_WORDS + WITH_FLAGS)
def test_the_flags_are_argparse_s_own(argv: list[str]) -> None:
    parser = build_parser("agent", "hello")
    assert vars(read_command_line(argv, "agent", "hello")) == vars(parser.parse_args(argv))


def test_prompt_words_alone_get_lists_of_their_own() -> None:
    first = read_command_line(["hi"], "agent", "hello")
    first.approve.append("call_1")
    first.prompt.append("more")
    second = read_command_line(["hi"], "agent", "hello")
    assert second.approve == [] and second.prompt == ["hi"]


@pytest.mark.parametrize(("argv", "code"), [(["--help"], 0), (["--bogus"], 2), (["-x"], 2)])
def test_help_and_usage_errors_are_argparse_s(
    argv: list[str], code: int, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        read_command_line(argv, "agent", "hello")
    assert exited.value.code == code
    out, err = capsys.readouterr()
    assert ("usage: agent" in out) if code == 0 else ("agent: error:" in err)
