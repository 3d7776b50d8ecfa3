"""``harnessc new NAME``: a spec that compiles and shows the main features: file tools and
bash, an external tool, permission rules, a budget, one skill and one prompt template,
sub-agents (a Claude Code subagent file and a harnessc spec) and typed output (the
sub-agent spec's)."""

from __future__ import annotations

__all__ = ["scaffold_files"]

_SPEC = """\
{schema_line}version: 1
name: {name}
description: Describe what {name} does in one line.
models:
  main:
    provider: openai                 # openai | anthropic | google
    id: gpt-4.1-mini
    base_url: ${{OPENAI_BASE_URL:-https://api.openai.com/v1}}
    api_key_env: OPENAI_API_KEY      # the key stays in the environment
system_prompt: |
  You are {name}, a helpful assistant. Work in small steps and say what you did.
tools:
  - read
  - ls
  - grep
  - find
  - bash: {{timeout_s: 60}}
  - write
  - edit
  - external:                        # its answer comes from you: the run pauses for it
      name: ask_user
      description: Ask the user a question and wait for the answer.
      parameters: {{type: object, properties: {{question: {{type: string}}}}, required: [question]}}
permissions:                         # Claude Code's rules: deny, then ask, then allow
  allow: [Read, LS, Grep, Glob, Agent, ask_user, "Bash(ls *)", "Bash(echo *)", "Bash(cat *)",
          "Bash(curl *)", "Bash(git status *)"]
  ask: [Write, Edit]                 # a one-shot run pauses (exit 3); -i asks y / n / always
  deny: ["Read(./.env)"]             # the read tool refuses it; the sandbox hides it from bash
  default: ask                       # any other call (other bash commands) asks first
sandbox:                             # the kernel's boundary of bash, command hooks, MCP servers
  mode: on                           # refuse to start where it cannot be enforced (doctor says why)
  filesystem:
    writable: []                     # besides the workspace and a private /tmp, e.g. [~/.cache/pip]
    unreadable: []                   # besides Read deny rules, ~/.ssh, ~/.aws, ... e.g. ["*.pem"]
  network:
    allow: []                        # no network; e.g. [pypi.org, "*.github.com"] (via a proxy)
resources:
  skills: [{name}/skills]
  prompt_templates: [{name}/templates]
agents:                              # sub-agents: the model hands work to them (tool task)
  scout: {{from: {name}/agents/scout.md}}     # a Claude Code subagent file, as it is
  reporter: {{spec: {name}/reporter.yaml}}    # a harnessc spec: its answer is typed
budget:
  turns: 20
  tool_calls: 100
  wall_clock_s: 900
# Sessions (for --continue, --session ID) go to this project's folder in the per-user
# data folder, ~/.local/share/harnessc/projects/ (out of git); to keep them in the
# project instead: session: {{dir: .sessions}} (created with a .gitignore).
# File tools (read write edit ls grep find) only see the workspace: here the folder the
# agent runs in. Set allow_outside_workspace: true to widen it. bash runs the commands the
# permissions above let through inside the sandbox: it writes only the workspace, never
# reads .env or your credentials, and reaches no network (docs/sandbox.md).
tool_context:
  workspace: .
  allow_outside_workspace: false
"""

_SCOUT = """\
---
name: scout
description: Looks through the files for what it is asked and reports what it found.
tools: Read, Grep, Glob, LS
model: inherit
---
You look through the files of the workspace for what you are asked, without changing
anything, and report what you found in a few lines, naming the files.
"""

_REPORTER = """\
{schema_line}version: 1
name: {name}-reporter
description: Answers with a typed report (summary, file count, verdict) instead of prose.
models:
  main:
    provider: openai
    id: gpt-4.1-mini
    base_url: ${{OPENAI_BASE_URL:-https://api.openai.com/v1}}
    api_key_env: OPENAI_API_KEY
system_prompt: |
  You look at what you are asked about and answer with a short report.
tools: [read, ls, grep, find]
permissions: {{deny: ["Read(./.env)"]}}  # its parent's deny and ask rules hold for it anyway
sandbox: on
output:                              # the run ends with a value of this shape, validated
  schema:
    type: object
    properties:
      summary: {{type: string, maxLength: 400}}
      files: {{type: integer, minimum: 0}}
      verdict: {{type: string, enum: [fine, needs_work]}}
    required: [summary, files, verdict]
  retries: 2                         # invalid answers go back to the model this often
"""

_SKILL = """\
---
name: checklist
description: Turn a request with several steps into a short checklist and work through it in order.
---
# Checklist

1. Restate the request as three to seven concrete steps.
2. Do the steps in order; after each one, say in a line what changed.
3. Finish with the list, each step marked done or explaining why it is not.
"""

_TEMPLATE = """\
---
description: Summarise a file in five bullet points
argument-hint: <path>
---
Read $1 and summarise what it does in five bullet points. ${@:2}
"""


_TESTS = """\
# `harnessc test` runs each case from scratch in a fresh workspace against its cassette
# (recorded model replies: no network, no key). After an intended change of the prompt
# or the tools, `harnessc test --record {name}.tests.yaml` records them again.
agent: {name}.yaml
cases:
  - name: lists the workspace
    prompt: List the files here, then say how many there are.
    files: {{notes.md: "hello"}}
    cassette: {name}/cassettes/lists-the-workspace.jsonl
    answers: {{ask_user: "yes"}}        # results of external tools, by tool name
    approvals: {{write: deny}}          # answers to permission asks, by tool name
    expect:
      tools_called: [ls]
      tools_not_called: [write]
      final_text_matches: "(?i)1|one"
      max_turns: 4
      files: {{notes.md: "hello"}}
"""


def scaffold_files(name: str, schema_ref: str | None = None) -> dict[str, str]:
    """``{path relative to the spec folder: text}`` for a new agent ``name``."""
    schema_line = f"# yaml-language-server: $schema={schema_ref}\n" if schema_ref else ""
    return {
        f"{name}.yaml": _SPEC.format(name=name, schema_line=schema_line),
        f"{name}/agents/scout.md": _SCOUT,
        f"{name}/reporter.yaml": _REPORTER.format(
            name=name,
            schema_line=schema_line.replace("$schema=", "$schema=../") if schema_ref else "",
        ),
        f"{name}/skills/checklist/SKILL.md": _SKILL,
        f"{name}/templates/summarize.md": _TEMPLATE,
        f"{name}.tests.yaml": _TESTS.format(name=name),
    }
