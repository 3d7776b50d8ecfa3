"use strict";
const $ = (id) => document.getElementById(id);
const state = { token: sessionStorage.getItem("harnessc-token") || "", session: null, run: null };
$("token").value = state.token;

function headers(json) {
  const out = {};
  if (state.token) out["Authorization"] = "Bearer " + state.token;
  if (json) out["Content-Type"] = "application/json";
  return out;
}

async function api(path, body) {
  const options = body === undefined
    ? { headers: headers(false) }
    : { method: "POST", headers: headers(true), body: JSON.stringify(body) };
  const answer = await fetch(path, options);
  const data = await answer.json().catch(() => ({}));
  if (!answer.ok) {
    const message = (data.error && data.error.message) || answer.statusText;
    throw new Error(answer.status + ": " + message);
  }
  return data;
}

function problem(error) { $("problem").textContent = error ? String(error.message || error) : ""; }

function text(tag, content, cls) {
  const node = document.createElement(tag);
  node.textContent = content;
  if (cls) node.className = cls;
  return node;
}

async function loadSessions() {
  try {
    const data = await api("/v1/sessions");
    const list = $("sessions");
    list.replaceChildren();
    for (const s of data.sessions || []) {
      const item = text("li", s.name || s.first_prompt || s.id, "session");
      item.dataset.id = s.id;
      if (s.id === state.session) item.classList.add("current");
      item.appendChild(text("small", s.id.slice(0, 8) + (s.status ? " · " + s.status : "")));
      item.addEventListener("click", () => openSession(s.id));
      list.appendChild(item);
    }
    problem(null);
  } catch (error) { problem(error); }
}

async function openSession(id) {
  state.session = id;
  $("session-id").textContent = id || "(new)";
  $("history").replaceChildren();
  if (!id) return loadSessions();
  try {
    const data = await api("/v1/sessions/" + encodeURIComponent(id));
    for (const m of data.messages || []) {
      const content = typeof m.content === "string" ? m.content
        : (m.content || []).map((p) => p.text || (p.type === "toolCall" ? "[" + p.name + "]" : "")).join("");
      $("history").appendChild(text("div", m.role + ": " + content));
    }
    if (data.latest_run && data.latest_run.status !== "running") showStatus(data.latest_run);
    else if (data.latest_run) follow(data.latest_run.run_id);
  } catch (error) { problem(error); }
  loadSessions();
}

function showStatus(run) {
  state.run = run.run_id;
  $("status").textContent = run.status + (run.reason ? " (" + run.reason + ")" : "");
  $("reply").textContent = run.text || "";
  const box = $("pending");
  box.replaceChildren();
  for (const call of run.pending_tool_calls || []) {
    const card = document.createElement("div");
    card.className = "call";
    card.dataset.id = call.id;
    card.appendChild(text("div", call.name + " " + JSON.stringify(call.arguments) + "  [" + call.id + "]"));
    const row = document.createElement("div");
    row.className = "row";
    if (run.status === "awaiting_tool") {
      const input = document.createElement("input");
      input.className = "answer";
      input.placeholder = "result";
      const send = text("button", "answer", "send-answer");
      send.type = "button";
      send.addEventListener("click", () => resume({ results: { [call.id]: input.value } }));
      row.append(input, send);
    } else {
      const approve = text("button", "approve", "approve");
      const deny = text("button", "deny", "deny");
      approve.type = deny.type = "button";
      approve.addEventListener("click", () => resume({ approvals: { [call.id]: true } }));
      deny.addEventListener("click", () => resume({ approvals: { [call.id]: false } }));
      row.append(approve, deny);
    }
    card.appendChild(row);
    box.appendChild(card);
  }
}

async function follow(runId) {
  state.run = runId;
  $("status").textContent = "running";
  $("pending").replaceChildren();
  $("events").textContent = "";
  try {
    const answer = await fetch("/v1/runs/" + encodeURIComponent(runId) + "/events", { headers: headers(false) });
    if (!answer.ok) throw new Error(answer.status + " " + answer.statusText);
    const reader = answer.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      let cut;
      while ((cut = buffer.indexOf("\n\n")) >= 0) {
        const block = buffer.slice(0, cut);
        buffer = buffer.slice(cut + 2);
        let id = "", data = "";
        for (const line of block.split("\n")) {
          if (line.startsWith("id:")) id = line.slice(3).trim();
          else if (line.startsWith("data:")) data += line.slice(5).trim();
        }
        if (!data) continue;
        const event = JSON.parse(data);
        let line = "#" + id + " " + event.type;
        if (event.type === "message_update" && event.delta) line += " " + JSON.stringify(event.delta);
        if (event.tool_name) line += " " + event.tool_name;
        if (event.reason) line += " " + event.reason;
        $("events").textContent += line + "\n";
      }
    }
    showStatus(await api("/v1/runs/" + encodeURIComponent(runId)));
    problem(null);
  } catch (error) { problem(error); }
  loadSessions();
}

async function send() {
  const prompt = $("prompt").value;
  if (!prompt.trim()) return;
  try {
    const body = { prompt };
    if (state.session) body.session_id = state.session;
    const started = await api("/v1/runs", body);
    state.session = started.session_id;
    $("session-id").textContent = started.session_id;
    $("prompt").value = "";
    $("history").appendChild(text("div", "user: " + prompt));
    await follow(started.run_id);
  } catch (error) { problem(error); }
}

async function resume(body) {
  try {
    await api("/v1/runs/" + encodeURIComponent(state.run) + "/resume", body);
    await follow(state.run);
  } catch (error) { problem(error); }
}

$("send").addEventListener("click", send);
$("abort").addEventListener("click", () => state.run && api("/v1/runs/" + encodeURIComponent(state.run) + "/abort", {}).catch(problem));
$("refresh").addEventListener("click", loadSessions);
$("new-session").addEventListener("click", () => openSession(null));
$("save-token").addEventListener("click", () => {
  state.token = $("token").value;
  sessionStorage.setItem("harnessc-token", state.token);
  loadSessions();
});
fetch("/healthz").then((r) => r.json()).then((h) => { $("agent").textContent = h.agent; document.title = h.agent; });
loadSessions();
