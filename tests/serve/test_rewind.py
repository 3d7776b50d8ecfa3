"""Rewind through the native API of ``--serve`` (a real server process, httpx): the
checkpoints of a session's runs (bash calls approved over HTTP: a permission ask), what
each would change, and a rewind of the files and the conversation."""

from __future__ import annotations

import json

from .servekit import Served, wait_status


def _bash_run(client, session_id: str | None, command: str) -> str:  # type: ignore[no-untyped-def]
    body = {"prompt": "call bash " + json.dumps({"command": command})}
    if session_id is not None:
        body["session_id"] = session_id
    started = client.post("/v1/runs", json=body)
    assert started.status_code == 201, started.text
    run_id = started.json()["run_id"]
    status = wait_status(client, run_id, "paused")
    [call] = status["pending_tool_calls"]
    resumed = client.post(f"/v1/runs/{run_id}/resume", json={"approvals": {call["id"]: True}})
    assert resumed.status_code == 200, resumed.text
    return str(wait_status(client, run_id, "done")["session_id"])


def test_a_session_and_its_files_are_rewound_over_http(server: Served) -> None:
    with server.client() as client:
        session_id = _bash_run(client, None, "mkdir -p rw && printf one > rw/f.txt")
        _bash_run(client, session_id, "printf two > rw/f.txt && printf new > rw/g.txt")
        work = server.log.parent
        assert (work / "rw" / "f.txt").read_text() == "two"

        listed = client.get(f"/v1/sessions/{session_id}/checkpoints")
        assert listed.status_code == 200, listed.text
        points = listed.json()["checkpoints"]
        assert [p["tools"] for p in points] == [["bash"], ["bash"]]
        assert points[0]["changes"] == ["rw/f.txt", "rw/g.txt"]
        target = points[0]["entry_id"]

        bad = client.post(f"/v1/sessions/{session_id}/rewind", json={"entry_id": target})
        assert bad.status_code == 400 and "'mode' must be one of" in bad.text
        unknown = client.post(
            f"/v1/sessions/{session_id}/rewind", json={"entry_id": "nope", "mode": "both"}
        )
        assert unknown.status_code == 400 and "no entry 'nope'" in unknown.text
        missing = client.post(
            "/v1/sessions/no-such-session/rewind", json={"entry_id": "x", "mode": "files"}
        )
        assert missing.status_code == 404

        dry = client.post(
            f"/v1/sessions/{session_id}/rewind",
            json={"entry_id": target, "mode": "both", "dry_run": True},
        )
        assert dry.status_code == 200, dry.text
        shown = dry.json()
        assert shown["done"] is False
        assert [c["line"] for c in shown["plan"]["changes"]] == ["M rw/f.txt", "D rw/g.txt"]
        assert "-two" in shown["diff"] and "+one" in shown["diff"]
        assert (work / "rw" / "g.txt").exists()

        done = client.post(
            f"/v1/sessions/{session_id}/rewind", json={"entry_id": target, "mode": "both"}
        )
        assert done.status_code == 200, done.text
        assert done.json()["done"] and done.json()["moved"]
        assert (work / "rw" / "f.txt").read_text() == "one"
        assert not (work / "rw" / "g.txt").exists()
        messages = client.get(f"/v1/sessions/{session_id}").json()["messages"]
        assert messages[-1]["role"] == "user" and "printf two" in messages[-1]["content"]

        # while a run of the session waits for its permission answer, the conversation
        # stays (the answer continues that branch); the files may move
        body = {"prompt": "call bash " + json.dumps({"command": "printf three > rw/f.txt"})}
        held = client.post("/v1/runs", json={**body, "session_id": session_id}).json()
        [call] = wait_status(client, held["run_id"], "paused")["pending_tool_calls"]
        refused = client.post(
            f"/v1/sessions/{session_id}/rewind", json={"entry_id": target, "mode": "both"}
        )
        assert refused.status_code == 409 and "has a paused run" in refused.text
        files = client.post(
            f"/v1/sessions/{session_id}/rewind",
            json={"entry_id": target, "mode": "files", "dry_run": True},
        )
        assert files.status_code == 200, files.text
        client.post(f"/v1/runs/{held['run_id']}/resume", json={"approvals": {call["id"]: True}})
        wait_status(client, held["run_id"], "done")
        assert (work / "rw" / "f.txt").read_text() == "three"

        # while a run of the session works, no rewind
        slow = client.post("/v1/runs", json={"prompt": "slow", "session_id": session_id})
        assert slow.status_code == 201
        busy = client.post(
            f"/v1/sessions/{session_id}/rewind", json={"entry_id": target, "mode": "files"}
        )
        assert busy.status_code == 409 and "has a run working" in busy.text
        wait_status(client, slow.json()["run_id"], "done")
