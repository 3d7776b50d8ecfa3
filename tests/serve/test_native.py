"""The native run API of ``--serve`` against a real server process and httpx."""

from __future__ import annotations

import json
import signal
import time

import httpx

from harnessc.runtime.permissions.shown_args import fingerprint

from .servekit import API_KEY, AgentKit, Served, sse_events, wait_status


def _events(client: httpx.Client, run_id: str, **headers: str) -> list[tuple[int, dict]]:
    with client.stream("GET", f"/v1/runs/{run_id}/events", headers=headers) as stream:
        assert stream.status_code == 200, stream.read()
        assert stream.headers["content-type"].startswith("text/event-stream")
        return list(sse_events(stream.iter_lines()))


def test_a_run_streams_its_events_and_ends_done(server: Served) -> None:
    with server.client() as client:
        started = client.post("/v1/runs", json={"prompt": "hello there"})
        assert started.status_code == 201, started.text
        run_id = started.json()["run_id"]
        events = _events(client, run_id)
        kinds = [e["type"] for _, e in events]
        assert "agent_start" in kinds and kinds[-1] == "agent_end"
        assert [i for i, _ in events] == list(range(1, len(events) + 1))
        assert API_KEY not in json.dumps(events)
        status = client.get(f"/v1/runs/{run_id}").json()
        assert status["status"] == "done"
        assert status["text"] == "echo: hello there"
        assert status["pending_tool_calls"] == []
        # what the run used: in its result and its agent_end, the total the agents' sum
        usage, tree = status["usage"], events[-1][1]["usage"]
        assert usage["turns"] == 1 and usage["input_tokens"] > 0
        assert status["usage_by_agent"] == tree["agents"]
        assert {k: usage[k] for k in tree["total"]} == tree["total"]
        assert tree["total"] == next(iter(tree["agents"].values()))
        # the same session goes on, with its history
        again = client.post(
            "/v1/runs", json={"prompt": "second", "session_id": started.json()["session_id"]}
        )
        assert again.status_code == 201, again.text
        assert again.json()["session_id"] == started.json()["session_id"]
        assert wait_status(client, again.json()["run_id"], "done")["text"] == "echo: second"
        shown = client.get(f"/v1/sessions/{started.json()['session_id']}").json()
        texts = [m["content"] for m in shown["messages"] if m["role"] == "user"]
        assert texts == ["hello there", "second"]
        listed = client.get("/v1/sessions").json()["sessions"]
        assert started.json()["session_id"] in [s["id"] for s in listed]
        hits = client.get("/v1/sessions", params={"q": "second"}).json()["hits"]
        assert started.json()["session_id"] in [h["session_id"] for h in hits]


def test_an_external_tool_pauses_and_results_over_http_resume_it(server: Served) -> None:
    with server.client() as client:
        prompt = 'call ask_human {"question": "which colour?"}'
        run_id = client.post("/v1/runs", json={"prompt": prompt}).json()["run_id"]
        events = _events(client, run_id)  # closes at the pause
        assert events[-1][1]["type"] == "agent_pause"
        status = client.get(f"/v1/runs/{run_id}").json()
        assert status["status"] == "awaiting_tool"
        [call] = status["pending_tool_calls"]
        assert call["name"] == "ask_human" and call["id"].startswith("call_")
        assert call["arguments"] == {"question": "which colour?"}
        session_id = status["session_id"]
        # the pending call must be answered first (or the run aborted): no new prompt
        busy = client.post("/v1/runs", json={"prompt": "other", "session_id": session_id})
        assert busy.status_code == 409 and "waiting for tool results" in busy.text
        wrong = client.post(f"/v1/runs/{run_id}/resume", json={"results": {"nope": "x"}})
        assert wrong.status_code == 409 and "nope" in wrong.json()["error"]["message"]
        resumed = client.post(f"/v1/runs/{run_id}/resume", json={"results": {call["id"]: "blue"}})
        assert resumed.status_code == 200, resumed.text
        assert wait_status(client, run_id, "done")["text"] == "done: blue"
        # the stream replays from the first event: the pause, then the resumed part
        kinds = [e["type"] for _, e in _events(client, run_id)]
        assert "agent_pause" in kinds and kinds[-1] == "agent_end"


def test_an_ask_is_approved_over_http_and_the_call_runs(server: Served) -> None:
    with server.client() as client:
        run_id = client.post(
            "/v1/runs", json={"prompt": 'call bash {"command": "echo approved-run"}'}
        ).json()["run_id"]
        status = wait_status(client, run_id, "paused")
        assert status["reason"].startswith("permission needed")
        [call] = status["pending_tool_calls"]
        assert call["name"] == "bash"
        bad = client.post(f"/v1/runs/{run_id}/resume", json={"approvals": {call["id"]: "yes"}})
        assert bad.status_code == 400 and "true or false" in bad.json()["error"]["message"]
        # an approval of other arguments than those the call holds now is refused
        assert call["fingerprint"] == fingerprint("bash", call["arguments"])
        other = fingerprint("bash", {"command": "touch pwned"})
        stale = {call["id"]: {"decision": "allow", "fingerprint": other}}
        refused = client.post(f"/v1/runs/{run_id}/resume", json={"approvals": stale})
        assert refused.status_code == 409, refused.text
        assert "not the one that was shown" in refused.json()["error"]["message"]
        assert client.get(f"/v1/runs/{run_id}").json()["status"] == "paused"
        shown = {call["id"]: {"decision": "allow", "fingerprint": call["fingerprint"]}}
        ok = client.post(f"/v1/runs/{run_id}/resume", json={"approvals": shown})
        assert ok.status_code == 200, ok.text
        assert "approved-run" in wait_status(client, run_id, "done")["text"]
        # a held call left unanswered: a new prompt on the session starts afresh
        held = client.post(
            "/v1/runs", json={"prompt": 'call bash {"command": "echo never"}'}
        ).json()
        wait_status(client, held["run_id"], "paused")
        fresh = client.post(
            "/v1/runs", json={"prompt": "instead", "session_id": held["session_id"]}
        )
        assert fresh.status_code == 201, fresh.text
        assert wait_status(client, fresh.json()["run_id"], "done")["text"] == "echo: instead"
        assert client.get(f"/v1/runs/{held['run_id']}").json()["status"] == "aborted"


def test_always_over_http_prints_its_rule_and_the_session_keeps_it(server: Served) -> None:
    with server.client() as client:
        started = client.post("/v1/runs", json={"prompt": 'call bash {"command": "echo kept"}'})
        run_id, session_id = started.json()["run_id"], started.json()["session_id"]
        [call] = wait_status(client, run_id, "paused")["pending_tool_calls"]
        always = client.post(
            f"/v1/runs/{run_id}/resume", json={"approvals": {call["id"]: "always"}}
        )
        assert always.status_code == 200, always.text
        assert "kept" in wait_status(client, run_id, "done")["text"]
        notices = [e["message"] for _, e in _events(client, run_id) if e["type"] == "notice"]
        assert "always allowed for this session: Bash(echo kept)" in notices
        again = client.post(
            "/v1/runs",
            json={"prompt": 'call bash {"command": "echo kept"}', "session_id": session_id},
        )
        assert "kept" in wait_status(client, again.json()["run_id"], "done")["text"]


def test_a_dropped_stream_resumes_with_last_event_id(server: Served) -> None:
    with server.client() as client:
        run_id = client.post("/v1/runs", json={"prompt": "slow please"}).json()["run_id"]
        seen: list[tuple[int, dict]] = []
        with client.stream("GET", f"/v1/runs/{run_id}/events") as stream:
            for pair in sse_events(stream.iter_lines()):
                seen.append(pair)
                if len(seen) == 3:
                    break  # the client goes away mid-stream
        rest = _events(client, run_id, **{"Last-Event-ID": str(seen[-1][0])})
        assert rest[0][0] == seen[-1][0] + 1
        whole = _events(client, run_id)
        assert [i for i, _ in seen + rest] == [i for i, _ in whole]
        assert rest[-1][1]["type"] == "agent_end"
        assert client.get(f"/v1/runs/{run_id}").json()["text"] == "slow reply here"
        bad = client.get(f"/v1/runs/{run_id}/events", headers={"Last-Event-ID": "x"})
        assert bad.status_code == 400


def test_abort_ends_a_working_run(server: Served) -> None:
    with server.client() as client:
        run_id = client.post("/v1/runs", json={"prompt": "slow again"}).json()["run_id"]
        assert client.post(f"/v1/runs/{run_id}/abort").status_code == 200
        assert wait_status(client, run_id, "aborted")["status"] == "aborted"


def test_the_token_is_required_everywhere_but_healthz(server: Served) -> None:
    assert httpx.get(f"{server.url}/healthz").status_code == 200
    for method, path in [
        ("GET", "/v1/runs/no-such-run"),
        ("POST", "/v1/runs"),
        ("GET", "/v1/sessions"),
        ("GET", "/openapi.json"),
        ("GET", "/v1/models"),
        ("POST", "/v1/chat/completions"),
        ("POST", "/agui"),
    ]:
        for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "Basic x"}):
            answer = httpx.request(method, f"{server.url}{path}", headers=headers)
            assert answer.status_code == 401, (method, path, headers)
            assert answer.json()["error"]["type"] == "unauthorized"
    with server.client() as client:
        assert client.get("/v1/runs/no-such-run").status_code == 404
        assert client.get("/openapi.json").json()["paths"]["/v1/runs"]


def test_bad_requests_get_json_errors_naming_the_problem(server: Served) -> None:
    with server.client() as client:
        cases = [
            (b"{not json", 400, "not valid JSON"),
            (b"[1, 2]", 400, "JSON object"),
            (b"", 400, "empty"),
            (json.dumps({"prompt": 5}).encode(), 400, "'prompt' must be a string"),
            (json.dumps({}).encode(), 400, "'prompt' is required"),
            (json.dumps({"prompt": "  "}).encode(), 400, "empty"),
            (json.dumps({"prompt": "x", "session_id": "nope"}).encode(), 404, "nope"),
            (b"[" * 100 + b"]" * 100, 400, "deeper"),
            (json.dumps({"prompt": "x" * 2_000_000}).encode(), 413, "bytes"),
        ]
        for body, code, words in cases:
            answer = client.post(
                "/v1/runs", content=body, headers={"Content-Type": "application/json"}
            )
            assert answer.status_code == code, (body[:40], answer.text)
            assert words in answer.json()["error"]["message"], answer.text
            assert "Traceback" not in answer.text and API_KEY not in answer.text
        as_json = {"Content-Type": "application/json"}
        for path in ("/a2a", "/agui", "/v1/chat/completions"):  # every endpoint is bounded
            big = client.post(path, content=b'{"a": "' + b"x" * 1_100_000 + b'"}', headers=as_json)
            assert big.status_code == 413, (path, big.text)
            deep = client.post(path, content=b"[" * 100 + b"]" * 100, headers=as_json)
            assert deep.status_code == 400 and "deeper" in deep.text, (path, deep.text)
            # and takes JSON only
            plain = client.post(path, content=b"{}", headers={"Content-Type": "text/plain"})
            assert plain.status_code == 415, (path, plain.text)
        assert client.get("/no/such/path").status_code == 404
        assert client.delete("/v1/runs").status_code == 405
        assert client.post("/v1/runs/none/resume", json={}).status_code == 404


def test_max_runs_answers_429_with_retry_after(kit: AgentKit) -> None:
    served = kit.serve("--max-runs", "1")
    try:
        with served.client() as client:
            first = client.post("/v1/runs", json={"prompt": "slow one"})
            assert first.status_code == 201
            second = client.post("/v1/runs", json={"prompt": "another"})
            assert second.status_code == 429
            assert second.headers["Retry-After"] == "1"
            wait_status(client, first.json()["run_id"], "done")
            assert client.post("/v1/runs", json={"prompt": "now"}).status_code == 201
    finally:
        assert served.stop() == 0


def test_sigterm_keeps_a_paused_run_that_a_restart_resumes(kit: AgentKit) -> None:
    served = kit.serve()
    with served.client() as client:
        run_id = client.post(
            "/v1/runs", json={"prompt": 'call ask_human {"question": "ship it?"}'}
        ).json()["run_id"]
        [call] = wait_status(client, run_id, "awaiting_tool")["pending_tool_calls"]
        working = client.post("/v1/runs", json={"prompt": "slow at shutdown"}).json()["run_id"]
        time.sleep(0.3)
    assert served.stop(signal.SIGTERM) == 0
    again = kit.serve()
    try:
        with again.client() as client:
            status = client.get(f"/v1/runs/{run_id}").json()
            assert status["status"] == "awaiting_tool"
            assert status["pending_tool_calls"] == [call]
            answer = client.post(f"/v1/runs/{run_id}/resume", json={"results": {call["id"]: "yes"}})
            assert answer.status_code == 200, answer.text
            assert wait_status(client, run_id, "done")["text"] == "done: yes"
            # the run working at SIGTERM paused at its turn end and was recorded
            drained = client.get(f"/v1/runs/{working}").json()
            assert drained["status"] == "paused" and drained["reason"] == "server_shutdown"
            assert client.post(f"/v1/runs/{working}/resume", json={}).status_code == 200
            assert wait_status(client, working, "done")["status"] == "done"
    finally:
        assert again.stop() == 0


def test_a_non_loopback_address_needs_a_token(kit: AgentKit) -> None:
    import subprocess

    result = subprocess.run(
        kit.command("--serve", "--host", "0.0.0.0", "--port", "0"),
        capture_output=True,
        text=True,
        env=kit.env,
        cwd=kit.workdir,
        timeout=60,
    )
    assert result.returncode == 2
    assert "needs a token" in result.stderr and "Traceback" not in result.stderr


def test_many_runs_at_once_share_one_process(server: Served) -> None:
    with server.client() as client:
        ids = [
            client.post("/v1/runs", json={"prompt": f"n{i}"}).json()["run_id"] for i in range(20)
        ]
        texts = [wait_status(client, i, "done")["text"] for i in ids]
        assert texts == [f"echo: n{i}" for i in range(20)]


def test_a_client_leaving_mid_stream_does_not_stop_the_run(server: Served) -> None:
    with server.client() as client:
        run_id = client.post("/v1/runs", json={"prompt": "slow leaving"}).json()["run_id"]
        with client.stream("GET", f"/v1/runs/{run_id}/events") as stream:
            next(stream.iter_lines())
        assert wait_status(client, run_id, "done")["text"] == "slow reply here"
