"""Code generation properties: safe literals, determinism, env refs, imports, names."""

from __future__ import annotations

import ast
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harnessc.compiler import compile, render
from harnessc.compiler.pyexpr import Call, DictExpr, ListExpr, Lit, layout, py_literal, py_string
from harnessc.spec import LoadedSpec, parse_spec

REPO = Path(__file__).resolve().parents[2]
MINIMAL = """\
version: 1
name: mini
models:
  main: {provider: openai, id: gpt-4.1, api_key_env: OPENAI_API_KEY}
"""
TRICKY = [
    "",
    'say "hi"',
    "it's",
    "both ' and \"",
    "\"\"\"triple\"\"\" and '''triple'''",
    "back\\slash\\",
    'trailing quote"',
    "line one\nline two\n",
    "{{ jinja }} {% if x %}{% endif %} {# c #}",
    "tab\there\r\nCRLF",
    "unicode é ✓ 😀 \u2028 \x00 \x7f",
    "${NOT_EXPANDED} in a prompt",
    "x" * 300,
    ("long line with words " * 12 + "\n") * 3,
]


def q(value: str) -> str:
    """``value`` as a YAML double-quoted scalar (PyYAML's own emitter escapes it)."""
    dumped = yaml.safe_dump({"k": value}, default_style='"', allow_unicode=True, width=1 << 30)
    return dumped.strip().removeprefix('"k": ')


def spec_text(**fields: str) -> str:
    """A spec whose string fields hold ``fields`` exactly."""
    return f"""\
version: 1
name: tricky
description: {q(fields["description"])}
models:
  main:
    provider: openai
    id: gpt-4.1
    api_key_env: OPENAI_API_KEY
    headers: {{X-Note: {q(fields["header"])}}}
system_prompt: {q(fields["prompt"])}
tools:
  - external:
      name: ask
      description: {q(fields["tool"])}
      parameters: {{type: object, properties: {{q: {{type: string, description: {q(fields["param"])}}}}}}}
hooks:
  tool_call:
    - block: {{tool: ask, pattern: {q(fields["pattern"])}}}
      reason: {q(fields["reason"])}
    - command: {q(fields["command"])}
tool_context: {{note: {q(fields["context"])}}}
"""


def parse(text: str, tmp: Path) -> LoadedSpec:
    loaded = parse_spec(text.encode(), tmp / "tricky.yaml")
    assert loaded.ok, [d.format() for d in loaded.diagnostics]
    return loaded


def literal_values(module_text: str) -> dict[str, Any]:
    """Values of the constants and of the keyword arguments named below, from the AST."""
    tree = ast.parse(module_text)
    found: dict[str, Any] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            try:
                found[node.targets[0].id] = ast.literal_eval(node.value)
            except ValueError:
                pass
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            for kw in node.keywords:
                try:
                    found[f"{node.func.id}.{kw.arg}"] = ast.literal_eval(kw.value)
                except ValueError:
                    pass
            if node.func.id in ("command_hook", "ToolContextSource"):
                found[f"{node.func.id}.args"] = [ast.literal_eval(a) for a in node.args]
    return found


def check_round_trip(tmp: Path, **fields: str) -> str:
    defaults = dict.fromkeys(
        (
            "description",
            "header",
            "prompt",
            "tool",
            "param",
            "pattern",
            "reason",
            "command",
            "context",
        ),
        "",
    )
    values = {**defaults, **fields}
    values["pattern"] = values["pattern"] if _is_regex(values["pattern"]) else "x"
    # Texts the runtime needs (a tool description, a block reason, a command) must not
    # be blank: those cases are diagnostics, tested with the bad specs.
    for key, fallback in (("tool", "x"), ("reason", "r"), ("command", "true")):
        values[key] = values[key] if values[key].strip() else fallback
    text = render(parse(spec_text(**values), tmp), tmp / "generated")
    got = literal_values(text)
    assert got["DESCRIPTION"] == values["description"]
    assert got["SYSTEM_PROMPT"] == values["prompt"]
    assert got["Model.headers"] == {"X-Note": values["header"]}
    assert got["ExternalTool.description"] == values["tool"]
    assert got["ExternalTool.parameters"]["properties"]["q"]["description"] == values["param"]
    assert got["block_rule.pattern"] == values["pattern"]
    assert got["block_rule.reason"] == values["reason"]
    assert got["command_hook.args"] == ["tool_call", values["command"]]
    assert got["ToolContextSource.args"] == [{"note": values["context"]}]
    return text


def _is_regex(text: str) -> bool:
    import re

    try:
        re.compile(text)
    except re.error:
        return False
    return True


@pytest.mark.parametrize("value", TRICKY, ids=range(len(TRICKY)))
def test_tricky_strings_round_trip_exactly(value: str, tmp_path: Path) -> None:
    if "${" in value:  # env fields would expand it; verbatim fields keep it
        check_round_trip(tmp_path, description=value, prompt=value, tool=value, reason=value)
        return
    check_round_trip(
        tmp_path,
        description=value,
        header=value,
        prompt=value,
        tool=value,
        param=value,
        pattern=value,
        reason=value,
        command=value,
        context=value,
    )


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=60))
def test_any_string_round_trips(tmp_path: Path, value: str) -> None:
    value = value.replace("${", "$ {")  # references are tested on their own
    check_round_trip(
        tmp_path, description=value, prompt=value, tool=value, reason=value, param=value
    )


def test_output_with_tricky_strings_is_ruff_clean(
    tmp_path: Path, ruff: Callable[..., subprocess.CompletedProcess[str]]
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    for i, value in enumerate(TRICKY):
        fields = dict(description=value, prompt=value, tool=value, reason=value, param=value)
        text = check_round_trip(tmp_path, **fields)
        (out / f"m{i}.py").write_text(text, encoding="utf-8")
    result = ruff("format", "--check", "--line-length", "100", str(out))
    assert result.returncode == 0, result.stdout + result.stderr


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=40))
def test_py_string_evaluates_to_its_text(value: str) -> None:
    assert ast.literal_eval(py_string(value)) == value


def test_numbers_read_like_the_spec() -> None:
    assert [py_literal(v) for v in (120, 128000, 16384, 5.0, 0.4, 1e20, -3, True, None)] == [
        "120",
        "128_000",
        "16_384",
        "5.0",
        "0.4",
        "1e20",
        "-3",
        "True",
        "None",
    ]


def test_layout_explodes_only_what_does_not_fit() -> None:
    short = Call("f", [Lit(1)], [("b", ListExpr([Lit("x")]))])
    assert layout(short, 0, 0) == 'f(1, b=["x"])'
    long = Call(
        "f", [], [("items", DictExpr([(Lit("k" * 40), Lit("v" * 40)), (Lit("a"), Lit(1))]))]
    )
    assert layout(long, 0, 0) == (
        f'f(\n    items={{\n        "{"k" * 40}": "{"v" * 40}",\n        "a": 1,\n    }},\n)'
    )


def test_compile_is_deterministic_and_independent_of_the_cwd(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = REPO / "agents" / "coder.yaml"
    from harnessc.spec import load_spec

    first = compile(load_spec(spec, "agents/coder.yaml"), REPO / "generated")
    monkeypatch.chdir(tmp_path)
    second = compile(load_spec(spec, str(spec)), REPO / "generated")
    assert first == second
    assert first["coder.py"] == (REPO / "generated" / "coder.py").read_text()


def test_header_names_version_spec_and_hash(tmp_path: Path) -> None:
    import hashlib

    from harnessc import __version__

    loaded = parse(
        spec_text(
            **dict.fromkeys(
                (
                    "description",
                    "header",
                    "prompt",
                    "tool",
                    "param",
                    "pattern",
                    "reason",
                    "command",
                    "context",
                ),
                "x",
            )
        ),
        tmp_path,
    )
    text = render(loaded, tmp_path / "out")
    lines = text.splitlines()
    assert lines[0] == f"# Generated by harnessc {__version__} from ../tricky.yaml; do not edit."
    assert lines[2] == f"# spec sha256: {hashlib.sha256(loaded.raw).hexdigest()}"
    assert render(loaded, tmp_path / "out") == text  # no timestamp or other varying input


def test_env_refs_are_resolved_at_run_time_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOST", "build-time-value")
    text = (
        MINIMAL.replace(
            "  main: {provider: openai, id: gpt-4.1, api_key_env: OPENAI_API_KEY}\n",
            "  main:\n"
            "    provider: openai\n"
            "    id: ${MODEL:-gpt-4.1}\n"
            "    base_url: https://${HOST}/v1\n"
            "    api_key_env: OPENAI_API_KEY\n"
            "    headers: {X-Team: '${TEAM:-core}', X-Lit: 'cost $${5}'}\n",
        )
        + "session: {dir: '${SESSIONS}'}\ntool_context: {root: '${ROOT:-.}', deep: ['${A}']}\n"
    )
    out = render(parse(text, tmp_path), tmp_path)
    assert "build-time-value" not in out
    # the models are made once for each value of the variables they read
    assert "def shared_models(model: str, host: str, team: str) -> dict[str, Model]:" in out
    # an unset variable of base_url leaves the reference as written: --base-url may stand
    # in for it, and the run names the variable when nothing does
    assert (
        'models=shared_models(env("MODEL", "gpt-4.1"), env("HOST", "${HOST}"), '
        'env("TEAM", "core"))' in out
    )
    assert "id=model," in out
    assert 'base_url="".join(["https://", host, "/v1"])' in out
    assert '"X-Team": team' in out and '"X-Lit": "cost ${5}"' in out
    assert 'SESSIONS_DIR = Path(env("SESSIONS"))' in out
    assert 'ToolContextSource({"root": env("ROOT", "."), "deep": [env("A")]})' in out


def test_api_keys_are_only_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret-value")
    out = render(parse(MINIMAL, tmp_path), tmp_path)
    assert "sk-secret-value" not in out and 'api_key_env="OPENAI_API_KEY"' in out


def test_generated_modules_import_only_the_runtime() -> None:
    allowed = {"__future__", "functools", "pathlib", "typing"}  # typing: TYPE_CHECKING only
    for path in sorted((REPO / "generated").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                raise AssertionError(f"{path.name}: plain import {ast.unparse(node)}")
            if isinstance(node, ast.ImportFrom):
                module = node.module or ""
                assert (
                    module in allowed
                    or module == "harnessc.runtime"
                    or module.startswith("harnessc.runtime.")
                ), f"{path.name}: {module}"


def test_generated_modules_use_exactly_the_contract_names() -> None:
    contract = {
        "harnessc.runtime": {
            "AgentHarnessOptions",
            "AgentHarnessStreamOptions",
            "Budget",
            "Model",
            "ModelCost",
            "QueueMode",
            "ThinkingLevel",
            "ToolContextSource",
            "env",
            "run_cli",
        },
        "harnessc.runtime.tools": {
            "create_bash_tool",
            "create_read_tool",
            "create_write_tool",
            "create_edit_tool",
            "create_ls_tool",
            "create_grep_tool",
            "create_find_tool",
            "create_todo_tool",
            "create_finish_tool",
            "python_tool",
            "import_object",
            "ExternalTool",
            "AgentTool",  # shared_tools()'s annotation
        },
        "harnessc.runtime.resources": {"load_resources", "ContextFileSettings"},
        "harnessc.runtime.providers.fallback": {"ModelFallback"},
        "harnessc.runtime.telemetry": {"TelemetryConfig", "TelemetryExtension"},
        "harnessc.runtime.session": {"DataFolder", "JsonlSessionRepo", "Session", "resolve_folder"},
        "harnessc.runtime.extensions": {
            "python_hook",
            "command_hook",
            "block_rule",
            "CompactionExtension",
            "CompactionConfig",
            "SessionIndexExtension",
            "SessionIndexConfig",
            "TurnContinueExtension",
            "TurnContinueConfig",
            "TurnNudgeExtension",
            "TurnNudgeConfig",
        },
        "harnessc.runtime.mcp": {"McpToolset", "McpServerConfig", "McpOAuth"},
        "harnessc.runtime.permissions.gate": {"permission_hook"},
        "harnessc.runtime.agent.subagents": {"SubAgent", "SubAgents"},
        "harnessc.runtime.sandbox": {"SandboxPolicy"},  # every spec says what its sandbox is
        # build_options(http_clients=...)'s annotation, imported for type checkers only.
        "harnessc.runtime.providers.transport": {"HttpClientPool"},
        # build_options()'s default: the HttpClientPool the process's harnesses share
        "harnessc.runtime.providers": {"shared_http_clients"},
        # a typed agent (output:): its options, and the names its Output model is made of
        "harnessc.runtime.options.typed_output": {"OutputConfig"},
        # workspace checkpoints (checkpoints:, on by default)
        "harnessc.runtime.core.checkpoint_settings": {"CheckpointSettings"},
        "harnessc.runtime.core.output_model": {"BaseModel", "ConfigDict", "Field", "RootModel"},
        "typing": {"TYPE_CHECKING", "Any", "Literal"},
        "pathlib": {"Path"},
        "functools": {"cache"},  # shared_models() and shared_tools(): made once
        "__future__": {"annotations"},
    }
    used: dict[str, set[str]] = {}
    for path in sorted((REPO / "generated").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                used.setdefault(node.module or "", set()).update(a.name for a in node.names)
    for module, names in used.items():
        assert names <= contract[module], (module, names - contract[module])
    # Every contract name exists in the runtime with that name.
    import importlib

    for module, names in contract.items():
        loaded = importlib.import_module(module)
        for name in names:
            assert name == "annotations" or hasattr(loaded, name), (module, name)


@pytest.mark.parametrize(
    ("extension", "config", "where"),
    [
        (
            "turn_continue",
            {"require_finish": False, "require_todos_done": False},
            "require_finish",
        ),
        ("compaction", {"prune_tool_result_bytes": 4096, "prune_keep_bytes": 4096}, None),
        ("compaction", {"prune_tool_result_bytes": 1000}, "compaction"),  # default keep 2048
        ("turn_nudge", {"message": "{steps} of {max_steps}"}, None),
        ("turn_nudge", {"limit_message": "done {"}, None),
    ],
)
def test_extension_configs_the_runtime_refuses_are_build_errors(
    tmp_path: Path, extension: str, config: dict[str, Any], where: str | None
) -> None:
    """The spec runs the runtime's own decode/validate: same refusal, located in the YAML."""
    from harnessc.runtime import extensions
    from harnessc.runtime.extensions.base import ExtensionConfigError, decode_config
    from harnessc.runtime.extensions.registry import build_extension

    runtime_cls = {
        "compaction": extensions.CompactionConfig,
        "turn_continue": extensions.TurnContinueConfig,
        "turn_nudge": extensions.TurnNudgeConfig,
    }[extension]
    with pytest.raises(ExtensionConfigError) as refused:
        decode_config(runtime_cls, config, extension=extension)
    with pytest.raises(ExtensionConfigError):
        build_extension(extension, config)  # what the generated agent does at start
    body = "".join(
        f"\n    {key}: {yaml.safe_dump(value).split(chr(10))[0]}" for key, value in config.items()
    )
    text = MINIMAL + f"tools: [todo, finish]\nextensions:\n  {extension}:{body}\n"
    loaded = parse_spec(text.encode(), tmp_path / "spec.yaml")
    errors = [d for d in loaded.diagnostics if d.severity == "error"]
    assert not loaded.ok and len(errors) == 1, errors
    message = f"extensions.{refused.value.extension}.{refused.value.field}: "
    assert errors[0].message.startswith(message)
    assert str(refused.value).split(": ", 1)[1] in errors[0].message
    lines = text.splitlines()
    line = lines[errors[0].line - 1]
    assert line.strip().startswith(f"{where or refused.value.field}:"), line


def test_agent_names_map_to_module_names(tmp_path: Path) -> None:
    loaded = parse(MINIMAL.replace("name: mini", "name: my-agent"), tmp_path)
    out = compile(loaded, tmp_path / "generated")
    assert list(out) == ["my_agent.py"]
    assert 'AGENT_NAME = "my-agent"' in out["my_agent.py"]


def test_paths_are_relative_to_the_spec_and_posix(tmp_path: Path) -> None:
    (tmp_path / "skills" / "a").mkdir(parents=True)
    (tmp_path / "tpl").mkdir()
    text = (
        MINIMAL + "resources: {skills: [skills/a, ./skills/../skills], prompt_templates: [tpl]}\n"
    )
    out = render(parse(text, tmp_path / "specs" / ".."), tmp_path / "deep" / "out")
    assert 'SPEC_DIR = (Path(__file__).resolve().parent / "../..").resolve()' in out
    assert 'skills=[SPEC_DIR / "skills/a", SPEC_DIR / "skills"]' in out


DESIGN_MOMENTS = """
before_agent_start agent_start before_plan session.start context before_step step.start
turn_start before_provider_request before_provider_payload after_provider_response
message_start message_update message_end plan.draft after_plan plan.commit tool_call
tool_execution_start before_tool_call tool.call tool_result tool_execution_end
after_tool_call tool.result tool.error turn_end after_step step.end before_stop
on_budget_exceeded budget.warn on_pause session.pause agent_end on_complete
session.complete on_error session_before_compact session_compact session_before_tree
session_tree model_update thinking_level_update tools_update resources_update
""".split()


def test_every_moment_of_the_design_table_is_accepted(tmp_path: Path) -> None:
    hooks = "".join(f"  {q(m)}:\n    - command: 'true'\n" for m in DESIGN_MOMENTS)
    text = render(parse(MINIMAL + "hooks:\n" + hooks, tmp_path), tmp_path)
    assert text.count("command_hook(") == len(DESIGN_MOMENTS)


def test_tool_timeouts_reach_the_harness_and_the_python_tool(tmp_path: Path) -> None:
    (tmp_path / "mytools.py").write_text("def slow(n: int) -> str:\n    return str(n)\n")
    text = MINIMAL + (
        "tool_timeout_s: 30\n"
        "tools:\n"
        "  - python: {function: 'mytools:slow', timeout_s: 2.5}\n"
        "  - python: {function: 'mytools:slow', name: quick}\n"
    )
    out = render(parse(text, tmp_path), tmp_path)
    assert "tool_timeout_s=30," in out
    assert out.count("timeout_s=2.5)") == 1 and out.count("timeout_s=") == 2
    assert "tool_timeout_s" not in render(parse(MINIMAL, tmp_path), tmp_path)  # the default
