"""Cross-field and on-disk checks of a spec, run on the raw YAML data.

They work on the plain data (not the validated model) so they run even when another
part of the file has a type error: every problem of a file is reported at once.
Shapes that are wrong are skipped here; the model validation reports them.
"""

from __future__ import annotations

import ast
import functools
import importlib.machinery
import os
import shlex
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path as FsPath
from typing import Any

from harnessc.runtime.core.hooks import canonical_hook_name
from harnessc.runtime.options.typed_output import OUTPUT_TOOL
from harnessc.spec.diagnostics import Diagnostic, Severity, did_you_mean
from harnessc.spec.envref import ENV_FIELDS, malformed_env_ref
from harnessc.spec.mcp_checks import McpNames, check_mcp
from harnessc.spec.models import BUILTIN_TOOLS, PROVIDER_NAMES
from harnessc.spec.pathnames import exists_quietly as _exists
from harnessc.spec.pathnames import path_problem, runtime_modules
from harnessc.spec.schema_checks import output_schema_problems
from harnessc.spec.yamlsource import KeyPath, YamlSource

__all__ = ["check_spec", "hook_program_problem", "tool_names"]

_TOOL_MOMENT = "tool_call"
_SKIP_DIRS = {"__pycache__", "node_modules", "venv", ".venv", "site-packages"}


class _Checker:
    def __init__(self, source: YamlSource, spec_dir: FsPath) -> None:
        self.source = source
        self.data: dict[str, Any] = source.data if isinstance(source.data, dict) else {}
        self.spec_dir = spec_dir
        self.out: list[Diagnostic] = []
        self._modules: list[str] | None = None
        self.mcp = McpNames()

    def report(self, path: KeyPath, severity: Severity, message: str, *, key: bool = False) -> None:
        mark = self.source.mark(path, key=key)
        self.out.append(Diagnostic(self.source.path, mark.line, mark.col, severity, message))

    def run(self) -> list[Diagnostic]:
        self.check_name()
        self.check_model_ref()
        self.check_models()
        self.check_fallback()
        names = self.check_tools()
        names = self.check_output(names)
        self.mcp = check_mcp(self.data, self.spec_dir, self.report)
        active = self.check_active_tools(names)
        self.check_permissions(names)
        self.check_extensions(active)
        self.check_resources()
        self.check_hooks()
        self.check_env_strings()
        self.check_tool_context()
        return self.out

    # -- the agent's name -------------------------------------------------------------

    def check_name(self) -> None:
        name = self.data.get("name")
        if not isinstance(name, str) or not name:
            return
        module = name.replace("-", "_")
        owner = runtime_modules().get(module)
        if owner is not None:
            self.report(
                ("name",),
                "error",
                f"agent name {name!r} would compile to {module}.py, which shadows the module "
                f"{module!r} of {owner} (a dependency of the harnessc runtime) for every "
                "agent in the output folder; pick another name",
            )

    # -- models ------------------------------------------------------------------------

    def check_model_ref(self) -> None:
        models = self.data.get("models")
        model = self.data.get("model")
        if isinstance(models, dict) and models and isinstance(model, str) and model:
            if model not in models:
                hint = did_you_mean(model, models)
                keys = ", ".join(repr(k) for k in models)
                self.report(
                    ("model",), "error", f"model {model!r} is not a key of models ({keys}){hint}"
                )

    def check_models(self) -> None:
        models = self.data.get("models")
        if not isinstance(models, dict):
            return
        for key, model in models.items():
            if not isinstance(model, dict) or "api_key_env" in model:
                continue
            if model.get("provider") in PROVIDER_NAMES and "base_url" not in model:
                self.report(
                    ("models", key),
                    "warning",
                    f"model {key!r} names no api_key_env; requests to the public "
                    f"{model['provider']} API will carry no API key",
                    key=True,
                )

    def check_fallback(self) -> None:
        """Fallback names are model keys; a smaller context window is worth a warning."""
        models = self.data.get("models")
        fallback = self.data.get("fallback")
        if not isinstance(models, dict) or not models or not isinstance(fallback, list):
            return
        first = self.data.get("model")
        first = first if isinstance(first, str) and first in models else next(iter(models))
        window = _context_window(models.get(first))
        for index, key in enumerate(fallback):
            if not isinstance(key, str) or not key:
                continue
            if key not in models:
                hint = did_you_mean(key, models)
                keys = ", ".join(repr(k) for k in models)
                self.report(
                    ("fallback", index),
                    "error",
                    f"fallback model {key!r} is not a key of models ({keys}){hint}",
                )
                continue
            if key == first:
                self.report(
                    ("fallback", index),
                    "warning",
                    f"fallback model {key!r} is the model the agent starts with",
                )
            other = _context_window(models.get(key))
            if window and other and other < window:
                self.report(
                    ("fallback", index),
                    "warning",
                    f"fallback model {key!r} has a smaller context window ({other:,} tokens) "
                    f"than {first!r} ({window:,}): a long session may not fit it",
                )

    # -- tools -------------------------------------------------------------------------

    def check_tools(self) -> dict[str, KeyPath]:
        names: dict[str, KeyPath] = {}
        tools = self.data.get("tools")
        if not isinstance(tools, list):
            return names
        for i, (name, path) in enumerate(tool_names(tools)):
            if name in names:
                first = _dotted_index(names[name])
                self.report(path, "error", f"duplicate tool name {name!r} (also {first})")
                continue
            names[name] = path
            entry = tools[i]
            if isinstance(entry, dict) and "python" in entry:
                spec = entry["python"]
                function = spec.get("function") if isinstance(spec, dict) else spec
                where = (
                    ("tools", i, "python", "function")
                    if isinstance(spec, dict)
                    else ("tools", i, "python")
                )
                if isinstance(function, str):
                    self.check_import(function, where)
        return names

    def check_active_tools(self, names: dict[str, KeyPath]) -> set[str]:
        active = self.data.get("active_tools")
        if not isinstance(active, list):
            return set(names)
        seen: set[str] = set()
        for i, name in enumerate(active):
            if not isinstance(name, str) or not name:
                continue
            if name in seen:
                self.report(("active_tools", i), "warning", f"active_tools lists {name!r} twice")
            seen.add(name)
            if name in names:
                continue
            why_not_mcp = self.mcp.accepts(name)  # None: an MCP tool, "": not one
            if why_not_mcp:
                self.report(
                    ("active_tools", i), "error", f"active_tools names {name!r}: {why_not_mcp}"
                )
            elif why_not_mcp is not None and isinstance(self.data.get("tools", []), list):
                hint = did_you_mean(name, names)
                self.report(
                    ("active_tools", i),
                    "error",
                    f"active_tools names {name!r}, which no tool defines{hint}",
                )
        return seen & set(names)

    # -- permission rules ----------------------------------------------------------------

    def check_permissions(self, names: dict[str, KeyPath]) -> None:
        """Each rule names a tool: a built-in (harnessc's or Claude Code's name), one of the
        spec's tools, or an MCP server the spec declares (``mcp__h``, ``mcp__h__*``,
        ``mcp__h__tool``). A Claude Code tool harnessc lacks is a warning."""
        from harnessc.runtime.permissions.rules import (
            CLAUDE_ONLY_TOOLS,
            claude_only_warning,
            known_rule_tools,
            rule_tool,
        )

        section = self.data.get("permissions")
        if not isinstance(section, dict):
            return
        known = known_rule_tools(names)
        for key in ("allow", "ask", "deny"):
            rules = section.get(key)
            if not isinstance(rules, list):
                continue
            for i, text in enumerate(rules):
                name = rule_tool(text) if isinstance(text, str) else None
                if name is None or name in known:
                    continue  # a malformed rule is the model validation's to report
                path: KeyPath = ("permissions", key, i)
                if name in CLAUDE_ONLY_TOOLS:
                    self.report(path, "warning", claude_only_warning(text, name))
                    continue
                problem = self.mcp_rule_problem(name)
                if problem == "":
                    hint = did_you_mean(name, known)
                    problem = f"names no known tool or MCP server {name!r}{hint}"
                if problem:
                    self.report(path, "error", f"permission rule {text!r} {problem}")

    def mcp_rule_problem(self, name: str) -> str | None:
        """None when ``name`` may name tools of the spec's MCP servers; else why not
        ("" for a name that is not an MCP name at all)."""
        why = self.mcp.accepts(name)  # None: an MCP tool name, "": not one
        if not name.startswith("mcp__"):
            return f"names {name!r}: {why}" if why else why
        if self.mcp.open_prefix:
            return None  # an mcp.from file: its servers are known at run time
        server = name[len("mcp__") :].split("__", 1)[0].rstrip("*")
        if server not in self.mcp.prefixes:
            hint = did_you_mean(server, self.mcp.prefixes)
            return f"names the MCP server {server!r}, which the spec does not declare{hint}"
        prefix = self.mcp.prefixes[server][0]
        if prefix != f"mcp__{server}__":
            return f"names MCP server {server!r}, whose tools are named {prefix}..."
        if name in (f"mcp__{server}", f"mcp__{server}__*"):
            return None
        return f"names {name!r}: {why}" if why else None

    # -- extensions ----------------------------------------------------------------------

    def check_extensions(self, active: set[str]) -> None:
        extensions = self.data.get("extensions")
        if not isinstance(extensions, dict) or "turn_continue" not in extensions:
            return
        config = extensions["turn_continue"]
        if isinstance(config, dict) and config.get("max_continuations") == 0:
            return
        missing = [name for name in ("todo", "finish") if name not in active]
        if missing:
            listed = " and ".join(missing)
            self.report(
                ("extensions", "turn_continue"),
                "error",
                f"extension turn_continue needs the tools todo and finish to be active; "
                f"add {listed} to tools (and to active_tools when it is set)",
                key=True,
            )

    # -- resources -----------------------------------------------------------------------

    def check_resources(self) -> None:
        resources = self.data.get("resources")
        if not isinstance(resources, dict):
            return
        for kind in ("skills", "prompt_templates"):
            paths = resources.get(kind)
            if not isinstance(paths, list):
                continue
            what = "skills folder" if kind == "skills" else "prompt templates folder"
            found: dict[int, str] = {}
            for i, rel in enumerate(paths):
                if not isinstance(rel, str) or not rel:
                    continue
                problem = path_problem(rel)
                if problem is not None:
                    self.report(("resources", kind, i), "error", f"{what} {problem}")
                elif not _exists(self.spec_dir / rel):
                    self.report(
                        ("resources", kind, i),
                        "error",
                        f"{what} {rel!r} does not exist (paths are relative to the spec's folder)",
                    )
                else:
                    found[i] = os.path.abspath(self.spec_dir / rel)
            if found:
                self.check_resource_files(kind, found)

    def check_resource_files(self, kind: str, folders: dict[int, str]) -> None:
        """What loading the skills (or templates) will say at the agent's start, as
        warnings at the folder that holds the file: the agent still starts, without the
        files that cannot load."""
        from harnessc.runtime.resources.skills import load_skills
        from harnessc.runtime.resources.templates import load_prompt_templates

        load = load_skills if kind == "skills" else load_prompt_templates
        noun = "skill" if kind == "skills" else "prompt template"
        _, diagnostics = load(list(folders.values()))
        for diagnostic in diagnostics:
            index = next(
                (i for i, root in folders.items() if _within(diagnostic.path, root)),
                next(iter(folders)),
            )
            where = os.path.relpath(diagnostic.path, self.spec_dir)
            self.report(
                ("resources", kind, index), "warning", f"{noun} {where}: {diagnostic.message}"
            )

    # -- hooks ---------------------------------------------------------------------------

    def check_hooks(self) -> None:
        hooks = self.data.get("hooks")
        if not isinstance(hooks, dict):
            return
        for moment, handlers in hooks.items():
            if moment == "claude_settings":
                self.check_claude_settings(handlers)
                continue
            try:
                canonical = canonical_hook_name(moment)
            except ValueError:
                continue  # reported by the model validation
            if not isinstance(handlers, list):
                continue
            for i, handler in enumerate(handlers):
                if not isinstance(handler, dict):
                    continue
                path: KeyPath = ("hooks", moment, i)
                if "block" in handler and canonical != _TOOL_MOMENT:
                    self.report(
                        (*path, "block"),
                        "error",
                        f"hooks.{moment}[{i}]: block rules apply to tool calls; "
                        "move this handler to 'tool_call'",
                        key=True,
                    )
                if isinstance(handler.get("python"), str):
                    self.check_import(handler["python"], (*path, "python"))
                if isinstance(handler.get("command"), str):
                    self.check_command(handler["command"], (*path, "command"))

    def check_command(
        self, command: str, path: KeyPath, base: FsPath | None = None, where: str = ""
    ) -> None:
        """A hook program that is missing or not executable is an error: at a tool_call
        the hook would block every call (fail closed), elsewhere it would never run."""
        problem = hook_program_problem(command, base or self.spec_dir)
        if problem is not None:
            self.report(path, problem[0], where + problem[1])

    def check_claude_settings(self, value: Any) -> None:
        from harnessc.runtime.extensions.claude_settings import (
            ClaudeSettingsError,
            project_dir_of,
            read_claude_settings,
            unsupported_events,
        )

        path: KeyPath = ("hooks", "claude_settings")
        if not isinstance(value, str) or not value.strip():
            return  # reported by the model validation
        file = self.spec_dir / value
        try:
            entries = read_claude_settings(file)
        except ClaudeSettingsError as exc:
            self.report(path, "error", str(exc))
            return
        project = project_dir_of(file.resolve())
        for entry in entries:
            if entry.supported:
                self.check_command(entry.command, path, project, f"{value} {entry.where}: ")
        skipped = unsupported_events(entries)
        if skipped:
            self.report(
                path,
                "warning",
                f"{value}: harnessc has no moment for {', '.join(skipped)}; "
                "those hooks are skipped",
            )

    # -- python import paths -------------------------------------------------------------

    def module_file(self, module: str) -> FsPath | None:
        if path_problem(module.replace(".", "/") + ".py") is not None:
            return None
        base = self.spec_dir.joinpath(*module.split("."))
        for candidate in (base.with_suffix(".py"), base / "__init__.py"):
            if _exists(candidate, file=True):
                return candidate
        return None

    def local_modules(self) -> list[str]:
        if self._modules is None:
            found: list[str] = []
            for root, dirs, files in os.walk(self.spec_dir):
                dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in _SKIP_DIRS)
                rel = FsPath(root).relative_to(self.spec_dir)
                if len(rel.parts) > 3:
                    dirs[:] = []
                    continue
                for name in sorted(files):
                    if name.endswith(".py"):
                        parts = [*rel.parts, name[:-3]]
                        if parts[-1] == "__init__":
                            parts = parts[:-1]
                        if parts:
                            found.append(".".join(parts))
            self._modules = found
        return self._modules

    def check_import(self, target: str, path: KeyPath) -> None:
        if ":" not in target:
            return
        module, attr = target.split(":", 1)
        problem = path_problem(module.replace(".", "/"))
        if problem is not None:
            self.report(path, "error", f"module {problem}")
            return
        file = self.module_file(module)
        if file is None:
            if _installed(module):
                return
            hint = did_you_mean(module, self.local_modules())
            self.report(
                path,
                "warning",
                f"cannot find module {module!r} in the spec's folder or on sys.path{hint}",
            )
            return
        broken = _syntax_problem(file)
        if broken is not None:
            self.report(path, "error", f"module {module!r} does not compile: {broken}")
            return
        names = _top_level_names(file)
        first = attr.split(".")[0]
        if names is not None and first not in names:
            hint = did_you_mean(first, names)
            self.report(path, "warning", f"module {module!r} defines no {first!r}{hint}")

    # -- the typed result ------------------------------------------------------------

    def check_output(self, names: dict[str, KeyPath]) -> dict[str, KeyPath]:
        """Checks ``output:``; the tool names with final_result (permission rules may name it)."""
        output = self.data.get("output")
        if not isinstance(output, dict):
            return names
        target = output.get("type")
        if isinstance(target, str):
            self.check_import(target, ("output", "type"))
        schema = output.get("schema")
        if isinstance(schema, dict):
            for problem in output_schema_problems(schema):
                self.report(
                    ("output", "schema", *problem.where),
                    problem.severity,
                    problem.message,
                    key=problem.at_key,
                )
        if OUTPUT_TOOL in names:
            self.report(
                names[OUTPUT_TOOL],
                "error",
                f"the tool name {OUTPUT_TOOL!r} is the typed result's own tool (output:); "
                "rename this tool",
            )
        models = self.data.get("models")
        with_tool = {**names, OUTPUT_TOOL: names.get(OUTPUT_TOOL, ("output",))}
        if output.get("mode") != "native" or not isinstance(models, dict) or not models:
            return with_tool
        start = self.data.get("model")
        start = start if isinstance(start, str) and start in models else next(iter(models))
        for key, model in models.items():
            if isinstance(model, dict) and model.get("structured_output") is not True:
                self.report(
                    ("output", "mode"),
                    "error" if key == start else "warning",
                    f"output.mode native needs structured output, and model {key!r} does not "
                    "declare it (structured_output: true under models); use mode auto, tool "
                    "or prompted",
                )
        return with_tool

    # -- tool_context keys the built-in tools read ----------------------------------------

    def check_tool_context(self) -> None:
        context = self.data.get("tool_context")
        if not isinstance(context, dict):
            return
        names = context.get("env_passthrough")
        if names is not None and not (
            isinstance(names, str)
            or (isinstance(names, list) and all(isinstance(n, str) and n for n in names))
        ):
            self.report(
                ("tool_context", "env_passthrough"),
                "error",
                "tool_context.env_passthrough: expected a list of environment variable names",
            )
        for key in ("workspace", "cwd"):
            value = context.get(key)
            if value is not None and not isinstance(value, str):
                self.report(("tool_context", key), "error", f"tool_context.{key}: expected a path")
            elif isinstance(value, str) and path_problem(value) is not None:
                self.report(
                    ("tool_context", key), "error", f"tool_context.{key} {path_problem(value)}"
                )
        flag = context.get("allow_outside_workspace")
        if flag is not None and not isinstance(flag, bool | str):
            self.report(
                ("tool_context", "allow_outside_workspace"),
                "error",
                "tool_context.allow_outside_workspace: expected true or false",
            )

    # -- ${VAR} references -----------------------------------------------------------------

    def check_env_strings(self) -> None:
        for path, text in _env_strings(self.data):
            bad = malformed_env_ref(text)
            if bad is not None:
                self.report(
                    path,
                    "warning",
                    f"{bad!r} is not an environment reference (use ${{NAME}} or "
                    f"${{NAME:-default}}; write $${{ for a literal '${{')",
                )


def hook_program_problem(command: str, base: FsPath) -> tuple[Severity, str] | None:
    """What is wrong with the program a hook command starts, if anything.

    A path (``hooks/guard.sh``, ``$CLAUDE_PROJECT_DIR/.claude/hooks/x.sh``; relative to
    ``base``) must exist and be executable: an error otherwise. A bare name is looked
    up on PATH, as a shell does: not found there, it is an error when a file of that
    name is in ``base`` (``block.sh`` for ``./block.sh``: it would never run, and a
    tool_call hook that cannot run blocks every call), else a warning (the machine that
    runs the agent may have it).
    """
    try:
        words = shlex.split(command)
    except ValueError:
        return None  # shlex is not the shell: leave the command to it
    if not words or "=" in words[0].split("/")[0]:
        return None  # empty, or an environment assignment first
    word = shown = words[0]
    for var in ("$CLAUDE_PROJECT_DIR", "${CLAUDE_PROJECT_DIR}"):
        if word.startswith(var + "/"):
            word = os.fspath(base) + word[len(var) :]
    if any(c in word for c in "$`*?["):
        return None  # the shell decides
    if "/" not in word:
        if shutil.which(word) is not None or word in _SHELL_WORDS:
            return None
        if _exists(base / word, file=True):
            # run as a shell runs it: through PATH, so the file beside it never would
            return "error", (
                f"hook program {word!r} is not on PATH (a bare name is looked up there, "
                f"as a shell does); for the {word} beside the spec write ./{word}"
            )
        return "warning", f"hook program {word!r} is not on PATH"
    problem = path_problem(word)
    if problem is not None:
        return "error", f"hook program {problem}"
    program = FsPath(os.path.expanduser(word))
    if not program.is_absolute():
        program = base / program
    try:
        exists = program.is_file()
    except OSError as exc:
        return "error", f"hook program {shown!r} cannot be checked: {exc.strerror or exc}"
    if not exists:
        return "error", f"hook program {shown!r} does not exist (looked for {_shown(program)})"
    if not os.access(program, os.X_OK):
        return "error", f"hook program {shown!r} is not executable (chmod +x {_shown(program)})"
    return None


def _context_window(model: Any) -> int:
    value = model.get("context_window") if isinstance(model, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _shown(path: FsPath) -> str:
    """``path`` as a user would type it here: relative to the working directory inside it."""
    try:
        return os.path.relpath(path) if path.resolve().is_relative_to(FsPath.cwd()) else str(path)
    except (OSError, ValueError):
        return str(path)


# Shell builtins and keywords a hook command may start with.
_SHELL_WORDS = frozenset(
    "cd echo exit printf test [ true false read set export exec eval if for while case "
    "command type ulimit umask trap wait source . : !".split()
)


def check_spec(source: YamlSource, spec_dir: FsPath) -> list[Diagnostic]:
    """Cross-field and on-disk problems of one spec (paths resolve against ``spec_dir``)."""
    return _Checker(source, spec_dir).run()


def _dotted_index(path: KeyPath) -> str:
    return f"tools[{path[1]}]" if len(path) > 1 else "tools"


def tool_names(tools: list[Any]) -> Iterator[tuple[str, KeyPath]]:
    """The name each well-formed tool entry gives its tool (raw YAML data)."""
    for i, entry in enumerate(tools):
        path: KeyPath = ("tools", i)
        if isinstance(entry, str) and entry in BUILTIN_TOOLS:
            yield entry, path
        elif isinstance(entry, dict) and len(entry) == 1:
            kind, config = next(iter(entry.items()))
            if kind in BUILTIN_TOOLS:
                yield kind, path
            elif kind == "python":
                name = None
                function = config
                if isinstance(config, dict):
                    name = config.get("name")
                    function = config.get("function")
                if isinstance(name, str):
                    yield name, path
                elif isinstance(function, str) and ":" in function:
                    yield function.rsplit(":", 1)[1].rsplit(".", 1)[-1], path
            elif kind == "external" and isinstance(config, dict):
                name = config.get("name")
                if isinstance(name, str):
                    yield name, path


def _env_strings(data: Any) -> Iterator[tuple[KeyPath, str]]:
    """Every string where ${VAR} references are expanded (``ENV_FIELDS``)."""

    def walk(node: Any, pattern: tuple[str, ...], path: KeyPath) -> Iterator[tuple[KeyPath, str]]:
        if not pattern or pattern == ("**",):
            if isinstance(node, str):
                yield path, node
            elif pattern and isinstance(node, dict | list):
                items = node.items() if isinstance(node, dict) else enumerate(node)
                for key, value in items:
                    yield from walk(value, pattern, (*path, key))
            return
        if not isinstance(node, dict):
            return
        head, rest = pattern[0], pattern[1:]
        keys = list(node) if head == "*" else [head] if head in node else []
        for key in keys:
            yield from walk(node[key], rest, (*path, key))

    for pattern in ENV_FIELDS:
        yield from walk(data, pattern, ())


# sys.path as the process started: folders that agents put first on sys.path later
# (import_object) must not make another spec's missing module look installed.
_START_SYS_PATH = [entry for entry in sys.path if entry]


def _installed(module: str) -> bool:
    """Whether ``module`` is importable from the starting sys.path, found without importing."""
    top, *rest = module.split(".")
    spec = None
    for finder in sys.meta_path:
        find = getattr(finder, "find_spec", None)
        if find is None:
            continue
        if finder is importlib.machinery.PathFinder:
            spec = importlib.machinery.PathFinder.find_spec(top, _START_SYS_PATH)
        else:
            spec = find(top, None)
        if spec is not None:
            break
    if spec is None:
        return False
    if spec.submodule_search_locations is None:
        return True  # a plain module: its attributes (os.path) cannot be told apart here
    locations = list(spec.submodule_search_locations)
    for i, part in enumerate(rest):
        last = i == len(rest) - 1
        found: list[str] = []
        for location in locations:
            base = FsPath(location) / part
            if last and base.with_suffix(".py").is_file():
                return True
            if base.is_dir():
                found.append(str(base))
        if not found:
            return False
        locations = found
    return True


def _syntax_problem(file: FsPath) -> str | None:
    """Where and why ``file`` does not compile (None when it does, or cannot be read)."""
    try:
        compile(file.read_bytes(), str(file), "exec", dont_inherit=True)
    except SyntaxError as exc:
        return f"{file.name}:{exc.lineno}: {exc.msg}"
    except (OSError, ValueError):
        return None
    return None


def _top_level_names(file: FsPath) -> set[str] | None:
    """Names a module defines at top level, read without importing it."""
    try:
        return _names_in(str(file), file.stat().st_mtime_ns)
    except OSError:
        return None


@functools.lru_cache(maxsize=256)
def _names_in(file: str, _mtime_ns: int) -> set[str] | None:
    try:
        tree = ast.parse(FsPath(file).read_bytes())
    except (OSError, SyntaxError, ValueError):
        return None
    names: set[str] = set()
    statements: list[ast.stmt] = list(tree.body)
    while statements:
        node = statements.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            if any(alias.name == "*" for alias in node.names):
                return None
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.If | ast.Try | ast.With):
            # Conditional definitions: count every branch.
            for field in ("body", "orelse", "finalbody", "handlers"):
                for child in getattr(node, field, []):
                    statements.extend(
                        child.body if isinstance(child, ast.ExceptHandler) else [child]
                    )
    return names


def _within(path: str, root: str) -> bool:
    try:
        return os.path.commonpath([os.path.abspath(path), root]) == root
    except ValueError:
        return False
