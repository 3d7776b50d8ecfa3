"""Generated code injection: hostile strings in a spec are rendered as data.

Each payload would create a marker file if any part of it ran as Python (or as a
Jinja expression during rendering). The test compiles specs carrying the payloads in
every string field, imports the module, builds its options, checks that the marker
does not exist, and that every value came through byte for byte.
"""

from __future__ import annotations

import ast
import importlib.util
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from harnessc.compiler import compile as compile_specs
from harnessc.compiler import output_name
from harnessc.runtime.session import Session
from harnessc.spec import parse_spec


def payloads(marker: Path) -> list[str]:
    touch = f"__import__('pathlib').Path({str(marker)!r}).touch()"
    return [
        f'"; {touch}; "',
        f"'; {touch}; '",
        f'"""\n{touch}\n"""',
        f"'''\n{touch}\n'''",
        f'\\"; {touch} #',
        f"\\'; {touch} #",
        f"\\\n{touch}",
        f"x\n{touch}\n",
        f"x\r\n{touch}\r",
        f"x\u2028{touch}\u2029",
        f"{{{{ {touch} }}}}",
        f"{{% set x = {touch} %}}{{{{ x }}}}",
        f"{{# {touch} #}}",
        "{{ ''.__class__.__mro__[1].__subclasses__() }}",
        f"{{{{ cycler.__init__.__globals__.os.system('touch {marker}') }}}}",
        f"f'{{{touch}}}'",
        f"# {touch}",
        f"\\N{{LATIN SMALL LETTER A}}\\x41\\u0041 {touch}",
        f"\0 nul \x7f del \x1b[31m ansi {touch}",
        f"${{HOME}} $(touch {marker}) `touch {marker}`",
        "\\",
        '"',
        "'",
        " ",
    ]


def _verbatim(text: str) -> str:
    """``text`` for a field that expands ``${VAR}`` at run time (``$${`` is a literal ``${``)."""
    return text.replace("${", "$${")


def _spec(name: str, text: str, index: int) -> dict[str, Any]:
    """A spec holding ``text`` in every free-text field."""
    env_text = _verbatim(text)
    return {
        "version": 1,
        "name": name,
        "description": text,
        "system_prompt": text,
        "models": {
            "main": {
                "provider": "openai",
                "id": env_text or "m",
                "api_key_env": "INJECT_KEY",
                "base_url": "http://127.0.0.1:9/" + env_text,
                "headers": {"X-Inject": env_text},
                "compat": {"note": text, text or "k": [text]},
            }
        },
        "tools": [
            "read",
            {
                "external": {
                    "name": f"ask_{index}",
                    "description": text,
                    "parameters": {
                        "type": "object",
                        "description": text,
                        "properties": {"q": {"type": "string", "description": text}},
                    },
                }
            },
        ],
        "hooks": {
            "tool_call": [
                {"command": "true " + text, "timeout_s": 1},  # a program that exists
                {
                    "block": {"tool": "read", "pattern": _regex_literal(text)},
                    "reason": _nonblank(text, "r"),
                },
            ]
        },
        "stream": {"headers": {"X-Other": env_text}, "metadata": {"text": text}},
        "tool_context": {"workspace": ".", "note": env_text},
        "session": {"repo": "memory"},
    }


def _nonblank(text: str, fallback: str) -> str:
    return text if text.strip() else fallback


def _regex_literal(text: str) -> str:
    import re

    return re.escape(text) or "x"


def _import(path: Path) -> Any:
    name = f"injected_{path.stem}_{abs(hash(path))}"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    finally:
        sys.modules.pop(name, None)
    return module


def test_spec_strings_are_rendered_as_data(tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    agents = tmp_path / "agents"
    out = tmp_path / "generated"
    agents.mkdir()
    out.mkdir()
    texts = payloads(marker)
    for index, text in enumerate(texts):
        raw = yaml.safe_dump(_spec(f"inj{index}", text, index), allow_unicode=True).encode()
        loaded = parse_spec(raw, agents / f"inj{index}.yaml", f"inj{index}.yaml")
        assert loaded.ok, (text, [d.format() for d in loaded.diagnostics])
        ((name, source),) = compile_specs(loaded, out).items()
        ast.parse(source)
        path = out / name
        path.write_text(source)
        module = _import(path)
        assert not marker.exists(), f"payload {index} ran while importing: {text!r}"
        options = module.build_options(session=Session())
        assert not marker.exists(), f"payload {index} ran in build_options: {text!r}"

        assert module.DESCRIPTION == text
        assert options.system_prompt == text
        model = options.models["main"]
        assert model.id == (text or "m")
        assert model.base_url == "http://127.0.0.1:9/" + text
        assert model.headers == {"X-Inject": text}
        assert model.compat == {"note": text, text or "k": [text]}
        (external,) = [t for t in options.tools if t.name == f"ask_{index}"]
        assert external.description == text
        assert external.parameters["description"] == text
        assert external.parameters["properties"]["q"]["description"] == text
        assert options.stream_options.headers == {"X-Other": text}
        assert options.stream_options.metadata == {"text": text}
        assert options.tool_context.context == {"workspace": ".", "note": text}
        command, block = options.hooks
        assert _hook_command(command) == "true " + text
    assert not marker.exists()


def _hook_command(spec: Any) -> str:
    """The shell command a command hook runs."""
    return str(spec.handler.command)


def test_spec_file_name_with_code_in_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    marker = tmp_path / "marker"
    touch = "__import__('pathlib').Path('marker').touch()"
    folder = tmp_path / f'agents\n{touch}\n"""'
    folder.mkdir()
    raw = yaml.safe_dump(_spec("named", "plain", 0)).encode()
    spec_path = folder / "named.yaml"
    spec_path.write_bytes(raw)
    loaded = parse_spec(raw, spec_path, str(spec_path))
    assert loaded.ok, [d.format() for d in loaded.diagnostics]
    out = tmp_path / "generated"
    out.mkdir()
    ((name, source),) = compile_specs(loaded, out).items()
    path = out / name
    path.write_text(source)
    module = _import(path)
    module.build_options(session=Session())
    assert not marker.exists()
    assert Path(module.SPEC_DIR) == folder.resolve()


BAD_NAMES = [
    "../evil",
    "a/b",
    "a\\b",
    "a;b",
    "a b",
    "Evil",
    "class",
    "import",
    "os",
    "sys",
    "harnessc",
    "1abc",
    "-abc",
    "a.b",
    "é",
    "abc\n",
    "abc\nimport os",
    "a" * 65,
    "",
]


@pytest.mark.parametrize("name", BAD_NAMES)
def test_invalid_agent_names_rejected_or_mapped_safely(name: str, tmp_path: Path) -> None:
    raw = yaml.safe_dump(_spec(name, "x", 0)).encode()
    loaded = parse_spec(raw, tmp_path / "a.yaml", "a.yaml")
    if loaded.spec is None:
        errors = [d for d in loaded.diagnostics if d.severity == "error"]
        assert errors and all(d.line >= 1 and d.col >= 1 for d in errors)
        assert any("name" in d.message for d in errors), [d.format() for d in errors]
        return
    file_name = output_name(loaded.spec)
    stem = file_name.removesuffix(".py")
    assert stem.isidentifier() and stem.isascii(), file_name
    assert "/" not in file_name and "\\" not in file_name and "\n" not in file_name
