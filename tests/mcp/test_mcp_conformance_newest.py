"""The MCP conformance suite's client scenarios at the newest revision (the rest, and
what the suite is: test_mcp_conformance.py)."""

from __future__ import annotations

from tests.mcp.test_mcp_conformance import check_group


def test_the_client_scenarios_pass_at_the_newest_revision() -> None:
    check_group("2026-07-28")
