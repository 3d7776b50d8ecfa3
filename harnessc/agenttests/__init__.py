"""``harnessc test``: cases run against recorded model replies (cassettes), compared with
their expectations, reported as a table and as JUnit XML."""

from harnessc.agenttests.cases import Case, Expect, TestFile, TestFileError, load_test_file
from harnessc.agenttests.report import CaseResult, junit_xml, table
from harnessc.agenttests.run import TestRun, run_tests

__all__ = [
    "Case",
    "CaseResult",
    "Expect",
    "TestFile",
    "TestFileError",
    "TestRun",
    "junit_xml",
    "load_test_file",
    "run_tests",
    "table",
]
