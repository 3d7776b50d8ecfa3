"""The MCP project's conformance suite, client side, against harnessc's MCP client.

Every client scenario of the pinned suite runs (``harnessc.testing.mcp_conformance``):
at each protocol revision whose requirement file lists it (scored, or run without
scoring: extensions, scenarios added after the release), and the rest at the
version the suite picks. Each must pass, except the extensions harnessc does not
implement (``UNSUPPORTED``, each with why); one of those passing is reported too, so
the list stays true. Skips, saying why, without Node.js >= 22 or the suite
(``scripts/mcp-conformance-up`` installs it), except where
``HARNESSC_MCP_CONFORMANCE_REQUIRED=1`` (CI): there it fails.

The suite runs the client once per scenario, each in a process of its own forked from a
zygote that has imported the client (``conformance_zygote.py``: the MCP SDK's import is
most of a client run's CPU time), a few scenarios at a time;
``test_the_client_passes_started_as_the_suite_documents_it`` runs scenarios with
the client started afresh (``python -m harnessc.testing.mcp_conformance_client``).
"""

from __future__ import annotations

import concurrent.futures
import importlib.util
import os

import pytest

from harnessc.testing import mcp_conformance as suite

from .conformance_zygote import Zygote

# CI (.ci/run) installs the suite and sets this: there a missing suite fails the tests.
REQUIRED = os.environ.get("HARNESSC_MCP_CONFORMANCE_REQUIRED") == "1"
REASON = (
    "the mcp extra is not installed (pip install -e '.[dev]')"
    if importlib.util.find_spec("mcp") is None
    else suite.unavailable_reason()
)
pytestmark = pytest.mark.skipif(REASON is not None and not REQUIRED, reason=REASON or "")

# Extensions of the authorization spec the MCP SDK's client does not implement (never
# scored by the suite), by scenario.
UNSUPPORTED = {
    "auth/dpop": "DPoP-bound tokens (SEP-1932): the MCP SDK's OAuth client has no DPoP",
    "auth/dpop-nonce": "DPoP-bound tokens (SEP-1932): the MCP SDK's OAuth client has no DPoP",
    "auth/enterprise-managed-authorization": (
        "SEP-990: the ID token exchange at an enterprise identity provider has no "
        "configuration in harnessc (the SDK leaves that leg to the deployment)"
    ),
    "auth/wif-jwt-bearer": (
        "workload identity federation (a jwt-bearer grant with a platform's token): "
        "no configuration in harnessc"
    ),
}

# The newest revision runs from test_mcp_conformance_newest.py: a file of its own, so
# pytest-xdist (--dist loadfile) runs it beside these on the other worker.
GROUPS = ("2025-11-25", "other")
# Scenarios run at once: a run mostly waits (for the suite's servers, its own timers).
JOBS = 4
# Started afresh too: one with the authorization flow, one without.
FRESH = ("auth/scope-step-up", "tools_call")


@pytest.mark.parametrize("group", GROUPS)
def test_the_client_scenarios_pass(group: str) -> None:
    check_group(group)


def check_group(group: str) -> None:
    """Every planned scenario of ``group`` passes, save the unsupported ones."""
    assert REASON is None, f"the MCP conformance suite cannot run: {REASON}"
    planned = [
        p
        for p in suite.plan()
        if (p.revision == group) or (group == "other" and p.revision is None)
        # an unsupported extension fails alike at each revision: run at the newest only
        if not (p.scenario in UNSUPPORTED and p.revision not in (None, suite.REVISIONS[-1]))
    ]
    assert planned, f"no scenario planned for {group}"
    with Zygote() as zygote, concurrent.futures.ThreadPoolExecutor(JOBS) as pool:
        command = zygote.command()
        outcomes = list(
            pool.map(
                lambda p: suite.run_scenario(
                    p.scenario, p.revision, group=p.group, command=command
                ),
                planned,
            )
        )
    failing = [o for o in outcomes if not o.passed and o.scenario not in UNSUPPORTED]
    stale = [o.scenario for o in outcomes if o.passed and o.scenario in UNSUPPORTED]
    assert not failing, suite.report(failing)
    assert not stale, f"these pass now: remove them from UNSUPPORTED: {stale}"


def test_the_client_passes_started_as_the_suite_documents_it() -> None:
    assert REASON is None, f"the MCP conformance suite cannot run: {REASON}"
    planned = [p for p in suite.plan() if p.scenario in FRESH and p.revision == suite.REVISIONS[-1]]
    assert {p.scenario for p in planned} == set(FRESH), planned
    outcomes = suite.measure(planned, jobs=2)
    assert all(o.passed for o in outcomes), suite.report(outcomes)
