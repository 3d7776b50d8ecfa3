"""The one catalog of tools, extensions and providers, and everything that reads it."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest

from harnessc.compiler.render import render
from harnessc.runtime.core import catalog
from harnessc.runtime.extensions.registry import build_extension, extension_names
from harnessc.runtime.providers import get_provider
from harnessc.runtime.tools import Tool
from harnessc.spec import models as spec_models
from harnessc.spec.load import parse_spec
from harnessc.spec.schema import schema_dict

TOOL_NAMES = [entry.name for entry in catalog.TOOLS]
EXTENSION_NAMES = [entry.name for entry in catalog.EXTENSIONS]
PROVIDER_NAMES = [entry.name for entry in catalog.PROVIDERS]


@pytest.mark.parametrize("entry", catalog.TOOLS, ids=TOOL_NAMES)
def test_every_tool_factory_imports_and_builds_with_its_defaults(
    entry: catalog.ToolEntry,
) -> None:
    built = entry.build(**entry.defaults())
    assert isinstance(built, Tool)
    assert built.name == entry.name
    assert set(entry.defaults()) == set(entry.options)


@pytest.mark.parametrize("entry", catalog.EXTENSIONS, ids=EXTENSION_NAMES)
def test_every_extension_factory_imports_and_builds_with_its_defaults(
    entry: catalog.ExtensionEntry,
) -> None:
    config_type = entry.config_type()
    assert dataclasses.is_dataclass(config_type)
    built = entry.build(None)
    assert built.name == entry.name
    assert isinstance(built.config, config_type)
    # the registry builds the same extension by its name and every alias
    for name in (entry.name, *entry.aliases):
        assert type(build_extension(name)) is type(built)


@pytest.mark.parametrize("entry", catalog.PROVIDERS, ids=PROVIDER_NAMES)
def test_every_provider_imports_builds_and_serves_its_api(entry: catalog.ProviderEntry) -> None:
    built = entry.build()
    assert type(get_provider(entry.api)) is type(built)
    assert catalog.provider_for_api(entry.api) is entry
    assert entry.base_url.startswith("https://")


def test_the_registry_lists_the_catalog_extensions() -> None:
    assert set(EXTENSION_NAMES) <= set(extension_names())


def test_unknown_names_say_what_is_known() -> None:
    with pytest.raises(catalog.CatalogError, match="known: bash, read"):
        catalog.tool("shell")
    assert catalog.extension_for("hook/turn-nudge") is catalog.extension("turn_nudge")
    assert catalog.extension_for("turn-nudge") is catalog.extension("turn_nudge")
    assert catalog.extension_for("nope") is None


def test_the_schema_enums_equal_the_catalog() -> None:
    schema = schema_dict()
    defs = schema["$defs"]
    provider = defs["ModelSpec"]["properties"]["provider"]
    assert provider["enum"] == PROVIDER_NAMES
    tool_entry = defs[schema["properties"]["tools"]["items"]["$ref"].rsplit("/", 1)[1]]
    shorthand, mapping = tool_entry["anyOf"]
    assert shorthand["enum"] == TOOL_NAMES
    assert list(mapping["properties"]) == [
        *TOOL_NAMES,
        "python",
        "external",
    ]
    extensions = defs["ExtensionsSpec"]["properties"]
    assert list(extensions) == EXTENSION_NAMES
    for entry in catalog.EXTENSIONS:
        assert extensions[entry.name]["description"] == entry.summary


@pytest.mark.parametrize("entry", catalog.EXTENSIONS, ids=EXTENSION_NAMES)
def test_extension_spec_defaults_are_the_runtime_dataclass_defaults(
    entry: catalog.ExtensionEntry,
) -> None:
    defaults = {f.name: f.default for f in dataclasses.fields(entry.config_type())}
    model = spec_models.EXTENSION_SPECS[entry.name]
    assert model.extension_name == entry.name
    for name, info in model.model_fields.items():
        assert name in defaults, f"{entry.config} has no field {name}"
        # the same value of the same type: 10.0 is not 10 in the schema
        assert info.default == defaults[name], name
        assert type(info.default) is type(defaults[name]), name
    # Every runtime field is reachable from the spec, except the sessions root
    # (derived from the session file).
    assert set(defaults) - set(model.model_fields) <= {"root"}


def test_tool_option_defaults_are_the_factory_defaults() -> None:
    for entry in catalog.TOOLS:
        options = spec_models.TOOL_OPTIONS.get(entry.name, spec_models.NoConfig)
        assert tuple(options.model_fields) == entry.options
        for key, default in entry.defaults().items():
            assert options.model_fields[key].default == default


def test_the_compiler_emits_every_catalog_entry(tmp_path: Path) -> None:
    models = "".join(
        f"  m_{p.name}:\n    provider: {p.name}\n    id: x\n" for p in catalog.PROVIDERS
    )
    tools = "".join(f"  - {name}\n" for name in TOOL_NAMES)
    extensions = "".join(f"  {name}: {{}}\n" for name in EXTENSION_NAMES)
    text = f"version: 1\nname: every\nmodels:\n{models}tools:\n{tools}extensions:\n{extensions}"
    spec = tmp_path / "every.yaml"
    spec.write_text(text)
    loaded = parse_spec(text.encode(), spec)
    assert loaded.spec is not None, loaded.diagnostics
    module = render(loaded, tmp_path)
    for entry in catalog.TOOLS:
        assert f"{catalog.split_path(entry.factory)[1]}()" in module
    for ext in catalog.EXTENSIONS:
        factory = catalog.split_path(ext.factory)[1]
        config = catalog.split_path(ext.config)[1]
        assert f"{factory}({config}())" in module
    for wire in catalog.PROVIDERS:
        assert f'api="{wire.api}"' in module
        assert f'base_url="{wire.base_url}"' in module
    # in install order
    positions = [module.index(catalog.split_path(e.factory)[1] + "(") for e in catalog.EXTENSIONS]
    assert positions == sorted(positions)


def test_the_catalog_is_light() -> None:
    """Reading entries imports nothing beyond the runtime package itself."""
    probe = (
        "import sys, json\n"
        "import harnessc.runtime\n"
        "before = set(sys.modules)\n"
        "from harnessc.runtime.core import catalog\n"
        "catalog.tool('bash'); catalog.extension('compaction'); catalog.provider('openai')\n"
        "catalog.extension_for('hook/turn-nudge'); catalog.provider_for_api('anthropic-messages')\n"
        "print(json.dumps(sorted(set(sys.modules) - before)))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout
    assert set(json.loads(out)) <= {"harnessc.runtime.core.catalog", "inspect"}


@pytest.mark.parametrize("entry", catalog.TOOL_SOURCES, ids=lambda e: e.name)
def test_every_tool_source_imports_and_builds_with_its_defaults(
    entry: catalog.ToolSourceEntry,
) -> None:
    if not entry.available():
        pytest.skip(f"{entry.extra} is not installed")
    config_type = entry.config_type()
    assert dataclasses.is_dataclass(config_type)
    assert entry.defaults()  # read from the runtime's dataclass
    built = entry.load()([])
    assert built.name == entry.name and built.servers == []
    spec_defaults = {
        key: info.get_default(call_default_factory=True)
        for key, info in spec_models.McpServerSpec.model_fields.items()
        if key in entry.defaults()
    }
    assert spec_defaults == {k: entry.defaults()[k] for k in spec_defaults}
    assert set(spec_defaults) >= {"timeout_s", "required"}
