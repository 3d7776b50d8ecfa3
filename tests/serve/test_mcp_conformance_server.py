"""The MCP project's conformance suite, server side, against ``/mcp`` of a served agent.

The suite's server scenarios mostly test a reference server's own tools, prompts and
resources (a tool named ``test_image_content``, a prompt ``test_simple_prompt``...):
an agent served over MCP has one tool, itself, and no prompts or resources, so those
do not apply (``NOT_APPLICABLE``, each with why). The rest (the lifecycle, sessions,
the stateless revision, ping, tools/list, calling a tool and its errors, SSE streams,
DNS rebinding protection, HTTP headers, caching hints, input_required's rules) must
pass; two apply in part (``PARTLY``: the checks that need a missing feature are
named). Every scenario the suite lists is in one of the three tables, so a new one is
looked at. Skips like the client scenarios without Node.js >= 22 or the suite
(``scripts/mcp-conformance-up``), and fails instead under
``HARNESSC_MCP_CONFORMANCE_REQUIRED=1`` (CI).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator

import pytest

from harnessc.testing import ProtocolServer
from harnessc.testing import mcp_conformance as suite

from .servekit import AgentKit, Served, compile_agent

pytest.importorskip("mcp")

REQUIRED = os.environ.get("HARNESSC_MCP_CONFORMANCE_REQUIRED") == "1"
REASON = suite.unavailable_reason()
pytestmark = pytest.mark.skipif(REASON is not None and not REQUIRED, reason=REASON or "")

_REFERENCE_TOOL = "it calls a tool of the suite's reference server by name"

# The scenarios that apply to an agent served over MCP: each passes.
APPLICABLE = (
    "server-initialize",
    "server-session-lifecycle",
    "ping",
    "tools-list",
    "tools-call-simple-text",
    "tools-call-error",
    "server-sse-multiple-streams",
    "sep-2164-resource-not-found",
    "dns-rebinding-protection",
    "http-header-validation",
    "input-required-result-missing-input-response",
    "input-required-result-unsupported-methods",
    "input-required-result-ignore-extra-params",
    "input-required-result-validate-input",
)

# Scenarios that apply in part: the checks allowed to fail, with why.
PARTLY = {
    "server-stateless": {
        "sep-2575-server-rejects-undeclared-capability": "needs a tool that samples",
        "sep-2575-missing-capability-http-400": "needs a tool that samples",
    },
    "caching": {
        "sep-2549-prompts-list-caching-hints": "the agent serves no prompts",
        "sep-2549-resources-list-caching-hints": "the agent serves no resources",
        "sep-2549-resources-templates-list-caching-hints": "the agent serves no resources",
    },
}

NOT_APPLICABLE = {
    "logging-set-level": "the agent's server declares no logging capability",
    "completion-complete": "the agent serves no prompts or resource templates to complete",
    "tools-call-image": _REFERENCE_TOOL,
    "tools-call-audio": _REFERENCE_TOOL,
    "tools-call-embedded-resource": _REFERENCE_TOOL,
    "tools-call-mixed-content": _REFERENCE_TOOL,
    "tools-call-with-logging": _REFERENCE_TOOL,
    "tools-call-with-progress": _REFERENCE_TOOL,
    "tools-call-sampling": _REFERENCE_TOOL,
    "tools-call-elicitation": _REFERENCE_TOOL,
    "json-schema-2020-12": _REFERENCE_TOOL,
    "elicitation-sep1034-defaults": _REFERENCE_TOOL,
    "elicitation-sep1330-enums": _REFERENCE_TOOL,
    "server-sse-polling": _REFERENCE_TOOL,
    "resources-list": "the agent serves no resources",
    "resources-read-text": "the agent serves no resources",
    "resources-read-binary": "the agent serves no resources",
    "resources-templates-read": "the agent serves no resources",
    "resources-subscribe": "the agent serves no resources",
    "resources-unsubscribe": "the agent serves no resources",
    "sep-2640-skills-directory": "an extension (skills over MCP) harnessc does not serve",
    "sep-2640-skills-enumeration": "an extension (skills over MCP) harnessc does not serve",
    "sep-2640-skills-manifest": "an extension (skills over MCP) harnessc does not serve",
    "prompts-list": "the agent serves no prompts",
    "prompts-get-simple": "the agent serves no prompts",
    "prompts-get-with-args": "the agent serves no prompts",
    "prompts-get-embedded-resource": "the agent serves no prompts",
    "prompts-get-with-image": "the agent serves no prompts",
    "http-custom-header-server-validation": "the agent's tool has no x-mcp-header input",
    **{
        f"tasks-{name}": "the tasks extension, which the agent's server does not offer"
        for name in (
            "lifecycle",
            "capability-negotiation",
            "wire-fields",
            "request-state-removal",
            "mrtr-input",
            "request-headers",
            "dispatch-and-envelope",
            "status-notifications",
            "required-task-error",
            "mrtr-composition",
        )
    },
    **{
        f"input-required-result-{name}": _REFERENCE_TOOL
        for name in (
            "basic-elicitation",
            "basic-sampling",
            "basic-list-roots",
            "request-state",
            "multiple-input-requests",
            "multi-round",
            "non-tool-request",
            "result-type",
            "tampered-state",
            "capability-check",
        )
    },
}

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_FAILED = re.compile(r"\[([\w.-]+)\s*\]\s+FAILURE")
_COUNT = re.compile(r"Passed: (\d+)/(\d+)")


@pytest.fixture(scope="module")
def agent(
    tmp_path_factory: pytest.TempPathFactory, model_server: ProtocolServer
) -> Iterator[AgentKit]:
    made = compile_agent(tmp_path_factory.mktemp("conformance-server"), model_server.url)
    with made:
        yield made


@pytest.fixture(scope="module")
def open_server(agent: AgentKit) -> Served:
    """The agent served on loopback without a token (the suite sends none)."""
    return agent.serve(token=None)


def _run(url: str, scenario: str) -> tuple[int, set[str], str]:
    """(exit status, the ids of the failed checks, the output) of one scenario."""
    done = suite._conformance(
        ["server", "--url", url, "--scenario", scenario, "--timeout", "30000"], timeout=180
    )
    text = _ANSI.sub("", done.stdout + done.stderr)
    return done.returncode, set(_FAILED.findall(text)), text


def test_every_server_scenario_is_classified() -> None:
    assert REASON is None, f"the MCP conformance suite cannot run: {REASON}"
    listed = suite._conformance(["list", "--server"], timeout=60).stdout
    names = {
        line.strip()[2:].split(" [")[0]
        for line in _ANSI.sub("", listed).splitlines()
        if line.strip().startswith("- ")
    }
    known = set(APPLICABLE) | set(PARTLY) | set(NOT_APPLICABLE)
    assert names, listed
    assert not names - known, f"new server scenarios to look at: {sorted(names - known)}"
    assert not known - names, f"no longer in the suite: {sorted(known - names)}"


def test_the_applicable_server_scenarios_pass(open_server: Served) -> None:
    assert REASON is None, f"the MCP conformance suite cannot run: {REASON}"
    url = f"{open_server.url}/mcp"
    failing: list[str] = []
    for scenario in APPLICABLE:
        status, failed, text = _run(url, scenario)
        if status != 0 or failed:
            failing.append(f"{scenario}: {sorted(failed)}\n{text[-1500:]}")
    for scenario, allowed in PARTLY.items():
        status, failed, text = _run(url, scenario)
        counted = _COUNT.search(text)
        assert counted is not None, text[-1500:]
        if failed - set(allowed):
            failing.append(f"{scenario}: {sorted(failed - set(allowed))}\n{text[-1500:]}")
        stale = set(allowed) - failed
        assert not stale, f"{scenario}: these pass now, drop them from PARTLY: {stale}"
    assert not failing, "\n\n".join(failing)
