"""The dev page at / in a real headless chromium: a prompt, the live events, an external
call answered and a held call approved with the page's buttons."""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest

from .browser import Browser, find_chromium
from .servekit import AgentKit, Served


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    executable = find_chromium()
    if executable is None:
        pytest.skip("no chromium on this machine (apt-get install -y chromium)")
    try:
        running = Browser(executable)
    except OSError as exc:
        pytest.skip(f"chromium cannot start here: {exc}")
    try:
        running.call("Browser.getVersion")
    except (OSError, RuntimeError) as exc:
        running.close()
        pytest.skip(f"chromium cannot run here: {exc}")
    try:
        yield running
    finally:
        running.close()


def _click(browser: Browser, selector: str) -> None:
    browser.eval(f"document.querySelector({json.dumps(selector)}).click()")


def _type(browser: Browser, selector: str, value: str) -> None:
    browser.eval(f"document.querySelector({json.dumps(selector)}).value = {json.dumps(value)}")


def test_the_page_is_public_and_static(server: Served) -> None:
    page = httpx.get(f"{server.url}/")
    assert page.status_code == 200 and '<script src="/dev.js">' in page.text
    assert "script-src 'self'" in page.headers["content-security-policy"]
    assert httpx.get(f"{server.url}/dev.js").status_code == 200


@pytest.fixture(scope="module", params=["token", "no token"])
def page_server(request: pytest.FixtureRequest, kit: AgentKit) -> Iterator[Served]:
    """A server with a token, and one without (its Host and Origin checks let its own
    page through, as http://127.0.0.1:PORT)."""
    if request.param == "token":
        yield request.getfixturevalue("server")
        return
    served = kit.serve(token=None)
    yield served
    served.stop()


def test_the_dev_page_runs_answers_and_approves(page_server: Served, browser: Browser) -> None:
    server = page_server
    browser.open(f"{server.url}/")
    browser.wait_for("document.getElementById('agent').textContent === 'helper'")
    _type(browser, "#token", server.token or "")
    _click(browser, "#save-token")
    # a plain prompt: the events stream in, the reply shows
    _type(browser, "#prompt", "hello page")
    _click(browser, "#send")
    browser.wait_for("document.getElementById('status').textContent.startsWith('done')")
    assert browser.eval("document.getElementById('reply').textContent") == "echo: hello page"
    events = browser.eval("document.getElementById('events').textContent")
    assert "agent_start" in events and "agent_end" in events
    browser.wait_for("document.querySelectorAll('#sessions li').length > 0")
    # an external call: answered in the page
    _type(browser, "#prompt", 'call ask_human {"question": "colour?"}')
    _click(browser, "#send")
    browser.wait_for("document.querySelector('#pending .answer') !== null")
    assert "ask_human" in browser.eval("document.getElementById('pending').textContent")
    _type(browser, "#pending .answer", "green")
    _click(browser, "#pending .send-answer")
    browser.wait_for("document.getElementById('reply').textContent === 'done: green'")
    # a held call: approved with the button
    _type(browser, "#prompt", 'call bash {"command": "echo from-the-page"}')
    _click(browser, "#send")
    browser.wait_for("document.querySelector('#pending .approve') !== null")
    _click(browser, "#pending .approve")
    browser.wait_for("document.getElementById('reply').textContent.includes('from-the-page')")
    assert browser.eval("document.getElementById('problem').textContent") == ""
