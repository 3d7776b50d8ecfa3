"""How a test run is shown: a table on the terminal, and JUnit XML for CI."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from harnessc.agenttests.expect import Mismatch

__all__ = ["CaseResult", "junit_xml", "table"]


@dataclass(slots=True)
class CaseResult:
    """One case's outcome as reported."""

    file: str
    name: str
    mismatch: Mismatch | None
    turns: int = 0
    tool_calls: int = 0
    tokens: int = 0
    seconds: float = 0.0
    recorded: bool = False

    @property
    def passed(self) -> bool:
        return self.mismatch is None


def _cell(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


def table(results: Sequence[CaseResult]) -> str:
    """A plain-text table (case, result, turns, tool calls, tokens, first mismatch),
    then each failure in full, with its diff."""
    rows = [("case", "result", "turns", "tools", "tokens", "first mismatch")]
    for r in results:
        status = "pass" if r.passed else "FAIL"
        if r.recorded:
            status += " (recorded)"
        mismatch = r.mismatch.message.splitlines()[0] if r.mismatch else ""
        rows.append(
            (
                _cell(f"{r.file}: {r.name}", 60),
                status,
                str(r.turns),
                str(r.tool_calls),
                str(r.tokens),
                _cell(mismatch, 100),
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(5)]
    lines = [
        "  ".join(cell.ljust(widths[i]) if i < 5 else cell for i, cell in enumerate(row)).rstrip()
        for row in rows
    ]
    for r in results:
        if r.mismatch is not None:
            lines.append("")
            lines.append(f"{r.file}: {r.name}: {r.mismatch.message}")
            if r.mismatch.diff:
                lines.append(r.mismatch.diff)
    failed = sum(not r.passed for r in results)
    lines.append("")
    lines.append(f"{len(results) - failed} passed, {failed} failed")
    return "\n".join(lines)


def junit_xml(results: Sequence[CaseResult], path: Path) -> None:
    """The results as JUnit XML (one testsuite per tests file)."""
    root = ET.Element("testsuites", name="harnessc test")
    suites: dict[str, ET.Element] = {}
    for r in results:
        suite = suites.get(r.file)
        if suite is None:
            suite = ET.SubElement(root, "testsuite", name=r.file)
            suites[r.file] = suite
        case = ET.SubElement(
            suite, "testcase", classname=r.file, name=r.name, time=f"{r.seconds:.3f}"
        )
        if r.mismatch is not None:
            failure = ET.SubElement(case, "failure", message=r.mismatch.message)
            failure.text = r.mismatch.diff or r.mismatch.message
    for name, suite in suites.items():
        cases = [r for r in results if r.file == name]
        suite.set("tests", str(len(cases)))
        suite.set("failures", str(sum(not r.passed for r in cases)))
        suite.set("time", f"{sum(r.seconds for r in cases):.3f}")
    root.set("tests", str(len(results)))
    root.set("failures", str(sum(not r.passed for r in results)))
    path.parent.mkdir(parents=True, exist_ok=True)
    ET.ElementTree(root).write(path, encoding="utf-8", xml_declaration=True)
