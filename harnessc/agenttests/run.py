"""``harnessc test``: every case of the tests files from scratch, in parallel.

Each spec is compiled once (into a temporary folder); each case gets a fresh temporary
workspace with its files and runs in its own process (``child.py``) against its
cassette: no network, no key. ``record=True`` runs the cases against the real models
instead and writes their cassettes; ``base_url`` (``--base-url``, ``$HARNESSC_BASE_URL``)
sends every model's requests to one server then, without a key when it is on this
machine.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harnessc.agenttests.cases import Case, TestFile, TestFileError, discover, load_test_file
from harnessc.agenttests.expect import Mismatch, first_mismatch
from harnessc.agenttests.report import CaseResult

__all__ = ["TestRun", "run_tests"]

_CASE_TIMEOUT_S = 600.0


@dataclass(slots=True)
class TestRun:
    """What ``run_tests`` found: the case results, and files that could not be run."""

    results: list[CaseResult]
    problems: list[str]

    @property
    def ok(self) -> bool:
        return not self.problems and all(r.passed for r in self.results)


def _shown(path: Path) -> str:
    try:
        return os.path.relpath(path)
    except ValueError:
        return str(path)


def _compile(test_file: TestFile, out_dir: Path) -> Path:
    """The agent's module, compiled into ``out_dir``; TestFileError when the spec has errors."""
    from harnessc.compiler import render
    from harnessc.spec import format_diagnostics, load_spec

    spec_path = test_file.spec_path
    if not spec_path.is_file():
        raise TestFileError(f"{_shown(test_file.path)}: agent {test_file.agent!r} is not a file")
    loaded = load_spec(spec_path)
    if loaded.spec is None:
        raise TestFileError(format_diagnostics(loaded.diagnostics))
    module = out_dir / f"{loaded.spec.module}.py"
    module.write_text(render(loaded, out_dir), encoding="utf-8")
    return module


async def _run_case(
    test_file: TestFile,
    case: Case,
    module: Path,
    scratch: Path,
    *,
    record: bool,
    base_url: tuple[str, str] | None,
    limit: asyncio.Semaphore,
) -> CaseResult:
    label = _shown(test_file.path)
    try:
        cassette = test_file.cassette_path(case)
    except TestFileError as exc:
        return CaseResult(file=label, name=case.name, mismatch=Mismatch(str(exc)))
    async with limit:
        workspace = Path(tempfile.mkdtemp(prefix="case-", dir=scratch))
        for rel, content in case.files.items():
            target = workspace / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(content, encoding="utf-8")
        job = {
            "module": str(module),
            "prompt": case.prompt,
            "cassette": str(cassette),
            "answers": case.answers,
            "approvals": case.approvals,
            "record": record,
            "base_url": base_url,
            "agent": test_file.agent,
            "case": case.name,
        }
        started = time.monotonic()
        outcome = await _child(job, workspace)
        seconds = time.monotonic() - started
    mismatch: Mismatch | None = first_mismatch(case.expect, outcome, workspace)
    return CaseResult(
        file=label,
        name=case.name,
        mismatch=mismatch,
        turns=int(outcome.get("turns") or 0),
        tool_calls=len(outcome.get("tools_called") or []),
        tokens=int(outcome.get("tokens") or 0),
        seconds=seconds,
        recorded=bool(outcome.get("recorded")),
    )


def _child_env() -> dict[str, str]:
    import harnessc

    env = dict(os.environ)
    root = str(Path(harnessc.__file__).resolve().parent.parent)  # this harnessc, first
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


async def _child(job: dict[str, Any], workspace: Path) -> dict[str, Any]:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "harnessc.agenttests.child",
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        cwd=workspace,
        env=_child_env(),
    )
    try:
        out, err = await asyncio.wait_for(
            process.communicate(json.dumps(job).encode()), _CASE_TIMEOUT_S
        )
    except TimeoutError:
        process.kill()
        await process.wait()
        return {"error": f"the case ran longer than {_CASE_TIMEOUT_S:.0f} s"}
    lines = out.decode(errors="replace").strip().splitlines()
    try:
        outcome = json.loads(lines[-1]) if lines else None
    except ValueError:
        outcome = None
    if not isinstance(outcome, dict):
        tail = err.decode(errors="replace").strip().splitlines()[-3:]
        return {"error": "the case process failed: " + (" / ".join(tail) or "no output")}
    return outcome


async def _run_all(
    files: Sequence[TestFile],
    scratch: Path,
    *,
    record: bool,
    base_url: tuple[str, str] | None,
    jobs: int,
) -> tuple[list[CaseResult], list[str]]:
    limit = asyncio.Semaphore(max(1, jobs))
    problems: list[str] = []
    tasks = []
    modules: dict[Path, Path] = {}
    for index, test_file in enumerate(files):
        spec = test_file.spec_path
        if spec not in modules:
            out_dir = scratch / f"agent{index}"
            out_dir.mkdir()
            try:
                modules[spec] = _compile(test_file, out_dir)
            except TestFileError as exc:
                problems.append(str(exc))
                continue
        for case in test_file.cases:
            tasks.append(
                _run_case(
                    test_file,
                    case,
                    modules[spec],
                    scratch,
                    record=record,
                    base_url=base_url,
                    limit=limit,
                )
            )
    return list(await asyncio.gather(*tasks)), problems


def run_tests(
    targets: Sequence[str | os.PathLike[str]],
    *,
    record: bool = False,
    jobs: int | None = None,
    base_url: tuple[str, str] | None = None,
) -> TestRun:
    """Run every case of the tests files named (or found below the folders named).
    ``base_url``: (URL, where it was given) for every model while recording."""
    problems: list[str] = []
    files: list[TestFile] = []
    paths = discover(targets or ["."])
    if not paths:
        problems.append("no *.tests.yaml files found")
    for path in paths:
        try:
            files.append(load_test_file(path))
        except TestFileError as exc:
            problems.append(str(exc))
    with tempfile.TemporaryDirectory(prefix="harnessc-test-") as scratch:
        results, more = asyncio.run(
            _run_all(
                files,
                Path(scratch),
                record=record,
                base_url=base_url,
                jobs=jobs or os.cpu_count() or 2,
            )
        )
    return TestRun(results, problems + more)
