"""The OpenAI-compatible endpoint of ``--serve``, driven by the official ``openai`` client."""

from __future__ import annotations

import json

import pytest

from harnessc.runtime.permissions.shown_args import fingerprint

from .servekit import AgentKit, Served

openai = pytest.importorskip("openai")


def _client(server: Served) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{server.url}/v1", api_key=server.token or "anything")


def test_chat_completions_answer_with_the_final_text(server: Served) -> None:
    client = _client(server)
    assert [m.id for m in client.models.list().data] == ["helper"]
    raw = client.chat.completions.with_raw_response.create(
        model="helper",
        messages=[
            {"role": "system", "content": "ignored: the agent has its own"},
            {"role": "user", "content": "first question"},
            {"role": "assistant", "content": "first answer"},
            {"role": "user", "content": "what now"},
        ],
    )
    completion = raw.parse()
    assert completion.choices[0].message.content == "echo: what now"
    session_id = raw.headers["x-session-id"]
    # the earlier messages became the session's history
    with server.client() as http:
        shown = http.get(f"/v1/sessions/{session_id}").json()
    assert [m["role"] for m in shown["messages"]] == ["user", "assistant", "user", "assistant"]
    # the user field names a stored session: the conversation goes on there
    again = client.chat.completions.create(
        model="helper", messages=[{"role": "user", "content": "more"}], user=session_id
    )
    assert again.choices[0].message.content == "echo: more"
    with server.client() as http:
        shown = http.get(f"/v1/sessions/{session_id}").json()
    assert len(shown["messages"]) == 6


def test_streamed_deltas_add_up_to_exactly_the_final_text(server: Served) -> None:
    client = _client(server)
    stream = client.chat.completions.create(
        model="helper",
        messages=[{"role": "user", "content": 'call bash {"command": "echo streamed"}'}],
        stream=True,
        extra_headers={},
    )
    chunks = list(stream)
    assert all(c.object == "chat.completion.chunk" for c in chunks)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    # the bash call waits for approval: the reply says where to continue
    assert text.startswith("[paused: permission needed") and "/resume" in text
    # the note's body approves the call as shown, and only it
    body = json.loads(text[text.index("{") : text.rindex("}") + 1])
    [(call_id, approval)] = body["approvals"].items()
    assert approval == {
        "decision": "allow",
        "fingerprint": fingerprint("bash", {"command": "echo streamed"}),
    }
    assert chunks[-1].choices[0].finish_reason == "stop"
    stream = client.chat.completions.create(
        model="helper", messages=[{"role": "user", "content": "slow stream"}], stream=True
    )
    pieces = [
        c.choices[0].delta.content for c in stream if c.choices and c.choices[0].delta.content
    ]
    assert pieces == ["slow ", "reply ", "here"]


def test_a_session_header_continues_and_an_unknown_model_is_refused(server: Served) -> None:
    client = _client(server)
    raw = client.chat.completions.with_raw_response.create(
        model="helper", messages=[{"role": "user", "content": "one"}]
    )
    session_id = raw.headers["x-session-id"]
    again = client.chat.completions.with_raw_response.create(
        model="helper",
        messages=[{"role": "user", "content": "two"}],
        extra_headers={"X-Session-Id": session_id},
    )
    assert again.headers["x-session-id"] == session_id
    with pytest.raises(openai.NotFoundError) as caught:
        client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "x"}])
    assert "helper" in str(caught.value)
    with pytest.raises(openai.BadRequestError):
        client.chat.completions.create(model="helper", messages=[])
    with pytest.raises(openai.APIStatusError) as failed:
        client.with_options(max_retries=0).chat.completions.create(
            model="helper", messages=[{"role": "user", "content": "fail please"}]
        )
    assert failed.value.status_code == 502 and "refuses" in str(failed.value)


def test_without_a_token_any_authorization_is_accepted(kit: AgentKit) -> None:
    served = kit.serve(token=None)
    try:
        client = openai.OpenAI(base_url=f"{served.url}/v1", api_key="sk-whatever")
        reply = client.chat.completions.create(
            model="helper", messages=[{"role": "user", "content": "open"}]
        )
        assert reply.choices[0].message.content == "echo: open"
    finally:
        assert served.stop() == 0


def test_errors_carry_openai_s_code_and_param(server: Served) -> None:
    """The official client's exceptions expose ``code`` and ``param`` as for OpenAI's API."""
    client = _client(server).with_options(max_retries=0)
    user = [{"role": "user", "content": "x"}]
    with pytest.raises(openai.NotFoundError) as caught:
        client.chat.completions.create(model="gpt-4o", messages=user)
    assert (caught.value.code, caught.value.param) == ("model_not_found", "model")
    with pytest.raises(openai.BadRequestError) as caught:
        client.chat.completions.create(model="helper", messages=[])
    assert (caught.value.code, caught.value.param) == ("empty_array", "messages")
    with pytest.raises(openai.BadRequestError) as caught:
        client.chat.completions.create(model="helper", messages="hello")  # type: ignore[arg-type]
    assert (caught.value.code, caught.value.param) == ("invalid_type", "messages")
    with pytest.raises(openai.BadRequestError) as caught:
        client.post("/chat/completions", body={"model": "helper"}, cast_to=object)
    assert (caught.value.code, caught.value.param) == ("missing_required_parameter", "messages")
    with pytest.raises(openai.BadRequestError) as caught:
        client.chat.completions.create(
            model="helper", messages=[{"role": "assistant", "content": "no question"}]
        )
    assert (caught.value.code, caught.value.param) == ("invalid_value", "messages")
    with pytest.raises(openai.BadRequestError) as caught:
        client.chat.completions.create(
            model="helper",
            messages=[{"role": "user", "content": 7}],  # type: ignore[list-item, typeddict-item]
        )
    assert (caught.value.code, caught.value.param) == ("invalid_type", "messages[0].content")
    with pytest.raises(openai.APIStatusError) as failed:
        client.chat.completions.create(
            model="helper", messages=[{"role": "user", "content": "fail"}]
        )
    assert failed.value.status_code == 502 and failed.value.code == "agent_error"
    wrong = openai.OpenAI(base_url=f"{server.url}/v1", api_key="not-the-token", max_retries=0)
    with pytest.raises(openai.AuthenticationError) as denied:
        wrong.models.list()
    assert (denied.value.code, denied.value.param) == ("invalid_api_key", None)
    # a streamed run that fails: the error in the stream carries its code too
    with pytest.raises(openai.APIError) as streamed:
        list(
            client.chat.completions.create(
                model="helper", messages=[{"role": "user", "content": "fail"}], stream=True
            )
        )
    assert streamed.value.code == "agent_error"
