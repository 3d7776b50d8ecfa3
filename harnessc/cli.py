"""The ``harnessc`` command: build, check, schema, new, list, run, dev, test, serve, doctor,
serve-demo.

Exit codes: 0 success (warnings allowed), 1 errors in a spec or stale output,
2 usage errors. Diagnostics go to stderr as ``path:line:col: severity: message``.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import Any, NoReturn, TypeVar

import click

from harnessc import __version__
from harnessc.cli_sessions import sessions
from harnessc.compiler import compile as compile_specs
from harnessc.compiler import output_name
from harnessc.compiler.live import LiveAgent, agent_prog, run_dev
from harnessc.compiler.scaffold import scaffold_files
from harnessc.compiler.write import FileStatus, check_outputs, find_orphans, write_outputs
from harnessc.spec import Diagnostic, LoadedSpec, export_schema, format_diagnostics, load_spec
from harnessc.spec.models import agent_name_problem

__all__ = ["cli", "main"]

DEFAULT_SPECS = "agents"
DEFAULT_OUT = "generated"
F = TypeVar("F", bound=Callable[..., Any])


def _guard(func: F) -> F:
    """Unexpected failures print one line instead of a traceback (HARNESSC_DEBUG=1 shows it)."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except (click.exceptions.Exit, click.ClickException, click.Abort, SystemExit):
            raise
        except KeyboardInterrupt:
            raise SystemExit(130) from None
        except Exception as exc:
            if os.environ.get("HARNESSC_DEBUG"):
                raise
            click.echo(f"harnessc: internal error: {type(exc).__name__}: {exc}", err=True)
            click.echo("(set HARNESSC_DEBUG=1 to see the traceback)", err=True)
            raise SystemExit(1) from None

    return wrapper  # type: ignore[return-value]


# -- finding and loading specs ------------------------------------------------------------


@dataclass(slots=True)
class _Inputs:
    files: list[Path]
    dirs: list[Path]


def _display(path: Path) -> str:
    return PurePath(path).as_posix()


def _collect(paths: Sequence[str]) -> _Inputs:
    """Spec files named directly, plus ``*.yaml``/``*.yml`` directly inside named folders
    (not ``*.tests.yaml``: those are ``harnessc test`` cases)."""
    if not paths:
        if not Path(DEFAULT_SPECS).is_dir():
            raise click.UsageError(f"no {DEFAULT_SPECS}/ folder here; name a spec file or folder")
        paths = [DEFAULT_SPECS]
    files: list[Path] = []
    dirs: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            dirs.append(path)
            files.extend(_specs_in(path))
        elif path.is_file():
            files.append(path)
        else:
            raise click.UsageError(f"{raw}: no such file or folder")
    unique = list(dict.fromkeys(files))
    return _Inputs(unique, dirs)


def _load_all(files: Sequence[Path]) -> list[LoadedSpec]:
    loaded = [load_spec(path, _display(path)) for path in files]
    _check_unique_names(loaded)
    return loaded


def _check_unique_names(loaded: Sequence[LoadedSpec]) -> None:
    owners: dict[str, LoadedSpec] = {}
    for item in loaded:
        if item.spec is None:
            continue
        module = output_name(item.spec)
        if module in owners:
            other = owners[module].display_path
            mark = item.source.mark(("name",)) if item.source else None
            item.diagnostics.append(
                Diagnostic(
                    item.display_path,
                    mark.line if mark else 1,
                    mark.col if mark else 1,
                    "error",
                    f"agent {item.spec.name!r} compiles to {module}, like {other}; "
                    "agent names must be unique",
                )
            )
            item.spec = None
        else:
            owners[module] = item


def _report(loaded: Sequence[LoadedSpec]) -> tuple[int, int]:
    """Print every diagnostic to stderr; returns (errors, warnings)."""
    diagnostics = [d for item in loaded for d in item.diagnostics]
    text = format_diagnostics(diagnostics)
    if text:
        click.echo(text, err=True, nl=False)
    errors = sum(1 for d in diagnostics if d.severity == "error")
    return errors, len(diagnostics) - errors


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def _fail(errors: int, specs: int, tail: str) -> NoReturn:
    click.echo(
        f"harnessc: {_plural(errors, 'error')} in {_plural(specs, 'spec')}; {tail}", err=True
    )
    raise SystemExit(1)


# -- commands -------------------------------------------------------------------------------


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="harnessc")
def cli() -> None:
    """Compile declarative YAML agent specs into runnable Python agents."""


@cli.command()
@click.argument("specs", nargs=-1)
@click.option(
    "-o", "--out", "out_dir", default=DEFAULT_OUT, show_default=True, help="Output folder."
)
@click.option(
    "--check", is_flag=True, help="Write nothing; exit 1 if a generated file is stale or missing."
)
@click.option("--watch", is_flag=True, help="Rebuild whenever a spec changes.")
@_guard
def build(specs: tuple[str, ...], out_dir: str, check: bool, watch: bool) -> None:
    """Compile SPEC files and folders (default: agents/) into OUT."""
    if check and watch:
        raise click.UsageError("--check and --watch do not go together")
    inputs = _collect(specs)
    if watch:
        _watch(inputs, specs, out_dir)
        return
    raise SystemExit(_build_once(inputs, out_dir, check=check))


def _build_once(inputs: _Inputs, out_dir: str, *, check: bool) -> int:
    loaded = _load_all(inputs.files)
    errors, _warnings = _report(loaded)
    bad = sum(1 for item in loaded if not item.ok)
    if errors:
        _fail(errors, bad, "nothing written" if not check else "cannot check")
    outputs = compile_specs(loaded, out_dir)
    orphans = find_orphans(out_dir, outputs, inputs.dirs) if inputs.dirs else []
    if check:
        return _report_check(check_outputs(outputs, out_dir) + orphans)
    statuses = {s.path.name: s for s in write_outputs(outputs, out_dir)}
    for item in loaded:
        assert item.spec is not None
        status = statuses.pop(output_name(item.spec))
        click.echo(
            f"{item.spec.name}: {item.display_path} -> {_display(status.path)} ({status.status})"
        )
    for status in statuses.values():  # the sub-agent specs the built ones name
        click.echo(f"{status.path.stem}: sub-agent -> {_display(status.path)} ({status.status})")
    for orphan in orphans:
        click.echo(
            f"{_display(orphan.path)}: generated by harnessc but no spec produces it; delete it",
            err=True,
        )
    if not loaded:
        click.echo("no specs found", err=True)
    return 0


def _report_check(statuses: list[FileStatus]) -> int:
    problems = [s for s in statuses if s.status != "current"]
    notes = {
        "stale": "stale: differs from its spec",
        "missing": "missing",
        "orphan": "generated by harnessc but no spec produces it",
    }
    for status in problems:
        click.echo(f"{_display(status.path)}: {notes[status.status]}")
    if problems:
        if any(s.status == "orphan" for s in problems):
            click.echo("delete the generated files that no spec produces", err=True)
        if any(s.status != "orphan" for s in problems):
            click.echo("run `harnessc build` to update the generated files", err=True)
        return 1
    click.echo(f"{_plural(len(statuses), 'generated file')} current")
    return 0


def _watch(inputs: _Inputs, specs: tuple[str, ...], out_dir: str) -> None:
    import watchfiles

    def rebuild() -> None:
        try:
            _build_once(_collect(specs), out_dir, check=False)
        except SystemExit:
            pass  # errors were printed; keep watching

    rebuild()
    targets = [str(p) for p in inputs.dirs] + [
        str(p) for p in inputs.files if p.parent not in inputs.dirs
    ]
    click.echo(f"watching {', '.join(targets)} (Ctrl-C to stop)", err=True)
    try:
        for _changes in watchfiles.watch(*targets, watch_filter=_spec_filter, debounce=300):
            rebuild()
    except KeyboardInterrupt:
        pass


def _spec_filter(change: Any, path: str) -> bool:
    return path.endswith((".yaml", ".yml"))


@cli.command()
@click.argument("specs", nargs=-1)
@_guard
def check(specs: tuple[str, ...]) -> None:
    """Validate SPEC files and folders (default: agents/) without compiling."""
    inputs = _collect(specs)
    if not inputs.files:
        where = ", ".join(_display(d) for d in inputs.dirs) or "."
        click.echo(f"harnessc: no specs (*.yaml, *.yml) in {where}: nothing checked", err=True)
        raise SystemExit(1)
    loaded = _load_all(inputs.files)
    errors, _ = _report(loaded)
    for item in loaded:
        err = sum(1 for d in item.diagnostics if d.severity == "error")
        warn = len(item.diagnostics) - err
        if not err and not warn:
            click.echo(f"{item.display_path}: ok")
        else:
            parts = [_plural(n, w) for n, w in ((err, "error"), (warn, "warning")) if n]
            click.echo(f"{item.display_path}: {', '.join(parts)}")
        if item.spec is not None:
            from harnessc.spec.sandbox import sandbox_lines

            for line in sandbox_lines(item.spec):
                click.echo(f"  {line}")
        _show_remote_agents(item)
    raise SystemExit(1 if errors else 0)


def _show_remote_agents(item: LoadedSpec) -> None:
    """The cards of a spec's remote A2A sub-agents: each agent's name and skills, or
    why its card cannot be read (a note: the remote may not run yet)."""
    remote = [ref for ref in item.subagents if ref.a2a is not None]
    if not remote:
        return
    from harnessc.spec.remote_cards import describe_card, read_card

    for ref in remote:
        assert ref.a2a is not None
        card = read_card(ref.a2a, ref.headers)
        shown = describe_card(card) if isinstance(card, dict) else card
        click.echo(f"  {ref.name}: remote A2A agent {shown}")


@cli.command()
@click.option(
    "-o", "--out", "out_file", type=click.Path(dir_okay=False), help="Write to this file."
)
@click.option("--check", is_flag=True, help="With -o: exit 1 if the file differs from the export.")
@click.option(
    "--markdown", is_flag=True, help="The spec reference as Markdown tables, made from the schema."
)
@_guard
def schema(out_file: str | None, check: bool, markdown: bool) -> None:
    """Export the JSON Schema of agent specs, or the spec reference (stdout unless -o)."""
    text = export_schema()
    if markdown:
        from harnessc.compiler.reference import render_reference
        from harnessc.spec.schema import schema_dict

        text = render_reference(schema_dict())
    if out_file is None:
        if check:
            raise click.UsageError("--check needs -o FILE")
        click.echo(text, nl=False)
        return
    path = Path(out_file)
    current = path.read_text(encoding="utf-8") if path.is_file() else None
    if check:
        if current != text:
            flag = " --markdown" if markdown else ""
            click.echo(f"{out_file}: stale; run `harnessc schema{flag} -o {out_file}`")
            raise SystemExit(1)
        click.echo(f"{out_file}: current")
        return
    if current != text:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        click.echo(f"{out_file}: written")
    else:
        click.echo(f"{out_file}: unchanged")


@cli.command()
@click.argument("name")
@click.option(
    "--dir", "spec_dir", default=DEFAULT_SPECS, show_default=True, help="Folder of the spec."
)
@_guard
def new(name: str, spec_dir: str) -> None:
    """Scaffold the spec NAME.yaml with a skill and a prompt template."""
    problem = agent_name_problem(name)
    if problem:
        raise click.BadParameter(problem, param_hint="NAME")
    root = Path(spec_dir)
    schema_file = Path("schema/agent.schema.json")
    schema_ref = None
    if schema_file.is_file():
        schema_ref = PurePath(os.path.relpath(schema_file.resolve(), root.resolve())).as_posix()
    files = scaffold_files(name, schema_ref)
    existing = [rel for rel in files if (root / rel).exists()]
    if existing:
        for rel in existing:
            click.echo(f"{_display(root / rel)}: already exists", err=True)
        click.echo("harnessc: nothing written", err=True)
        raise SystemExit(1)
    for rel, text in files.items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
        click.echo(f"created {_display(target)}")
    spec_path = root / f"{name}.yaml"
    loaded = load_spec(spec_path, _display(spec_path))
    _report([loaded])
    click.echo(f"next: edit {_display(spec_path)}, then `harnessc build {_display(spec_path)}`")
    tests = root / f"{name}.tests.yaml"
    click.echo(f"tests: `harnessc test --record {_display(tests)}` records the cases' cassettes")


@cli.command("list")
@click.argument("folder", default=DEFAULT_SPECS, required=False)
@click.option(
    "-o", "--out", "out_dir", default=DEFAULT_OUT, show_default=True, help="Output folder."
)
@_guard
def list_agents(folder: str, out_dir: str) -> None:
    """List the agents of FOLDER (default: agents/): name, module status, description."""
    specs = _specs_in(Path(folder))
    if not specs:
        click.echo(f"no specs (*.yaml, *.yml) in {folder}", err=True)
        raise SystemExit(1 if not Path(folder).is_dir() else 0)
    loaded = _load_all(specs)
    rows: list[tuple[str, str, str]] = []
    for item in loaded:
        if item.spec is None:
            errors = sum(1 for d in item.diagnostics if d.severity == "error")
            rows.append(
                (
                    item.path.stem,
                    "has errors",
                    f"{_plural(errors, 'error')}: harnessc check {item.display_path}",
                )
            )
            continue
        mine = output_name(item.spec)
        outputs = compile_specs([item], out_dir)
        (status,) = check_outputs({mine: outputs[mine]}, out_dir)
        state = {"current": "built", "stale": "stale", "missing": "not built"}[status.status]
        rows.append((item.spec.name, state, item.spec.description or ""))
    width = max(len(name) for name, _, _ in rows)
    for name, state, text in rows:
        click.echo(f"{name.ljust(width)}  {state:<10}  {text}".rstrip())
    if any(state in ("stale", "not built") for _, state, _ in rows):
        click.echo(
            f"`harnessc build` writes the modules to {out_dir}/; `harnessc run NAME` runs one without building",
            err=True,
        )


# -- run / dev ------------------------------------------------------------------------------


_RUN_SETTINGS = {"ignore_unknown_options": True, "allow_interspersed_args": False}


def _agent_argv(agent_args: Sequence[str]) -> list[str]:
    """The agent's arguments without the ``--`` that separates them from harnessc's.

    Click stops at SPEC and keeps a following ``--``; passed on, argparse would read
    everything after it as prompt text. One leading ``--`` is dropped, so
    ``harnessc run SPEC -- --continue`` passes ``--continue`` (``-- --`` keeps one).
    """
    args = list(agent_args)
    return args[1:] if args[:1] == ["--"] else args


def _prog(command: str, spec: str, out_dir: str) -> str:
    return agent_prog(command, spec, None if out_dir == DEFAULT_OUT else out_dir)


def _agent_command(function: Callable[..., None]) -> Any:
    """``run`` and ``dev``: SPEC, the agent's own arguments, and where the module would live."""
    decorators = (
        cli.command(context_settings=_RUN_SETTINGS),
        click.argument("spec", metavar="SPEC|NAME"),
        click.argument("agent_args", nargs=-1, type=click.UNPROCESSED),
        click.option(
            "-o",
            "--out",
            "out_dir",
            default=DEFAULT_OUT,
            show_default=True,
            help="Where the module would be written (for its relative paths).",
        ),
        _guard,
    )
    for decorate in reversed(decorators):
        function = decorate(function)
    return function


def _find_spec(spec: str) -> str:
    """SPEC as given when it is a file, else ``agents/SPEC.yaml`` (``harnessc run coder``)."""
    if Path(spec).is_file():
        return spec
    if Path(spec).is_dir():
        raise click.BadParameter(f"{spec} is a folder; name a spec file", param_hint="SPEC")
    if "/" not in spec and not spec.endswith((".yaml", ".yml")):
        for suffix in (".yaml", ".yml"):
            candidate = Path(DEFAULT_SPECS) / f"{spec}{suffix}"
            if candidate.is_file():
                return _display(candidate)
    names = sorted(p.stem for p in _specs_in(Path(DEFAULT_SPECS)))
    from harnessc.spec.diagnostics import did_you_mean

    hint = did_you_mean(Path(spec).stem, names) if names else ""
    known = f"; agents here: {', '.join(names)}" if names else ""
    raise click.BadParameter(f"no spec file {spec} and no {DEFAULT_SPECS}/{spec}.yaml{hint}{known}")


def _specs_in(folder: Path) -> list[Path]:
    if not folder.is_dir():
        return []
    return sorted(
        p
        for p in folder.iterdir()
        if p.suffix in (".yaml", ".yml")
        and not p.name.endswith((".tests.yaml", ".tests.yml"))  # `harnessc test` cases
        and p.is_file()
    )


def _check_agent_args(command: str, spec: str, args: Sequence[str]) -> None:
    """``harnessc run SPEC -o x``: harnessc's own options go before SPEC."""
    before = list(args)[: list(args).index("--")] if "--" in args else list(args)
    for word in before:
        if word in ("-o", "--out") or word.startswith(("--out=", "-o")) and len(word) > 2:
            flag = "--out" if word.startswith("--out") else "-o"
            raise click.UsageError(
                f"{flag} is an option of harnessc {command} and goes before SPEC: "
                f"harnessc {command} {flag} DIR {spec} ...  (to pass it to the agent, put it after --)"
            )


@_agent_command
def run(spec: str, agent_args: tuple[str, ...], out_dir: str) -> None:
    """Compile SPEC (a file, or NAME for agents/NAME.yaml) in memory and run the agent's
    command line with AGENT_ARGS (after SPEC, or after --). The agent's own flags (-i,
    --continue, --base-url, --max-turns ...): harnessc run NAME --help."""
    spec = _find_spec(spec)
    _check_agent_args("run", spec, agent_args)
    live = LiveAgent(spec, out_dir)
    if not live.load():
        click.echo(f"harnessc: {spec} has errors; not running", err=True)
        raise SystemExit(1)
    raise SystemExit(live.run(_agent_argv(agent_args), prog=_prog("run", spec, out_dir)))


@_agent_command
def dev(spec: str, agent_args: tuple[str, ...], out_dir: str) -> None:
    """Run SPEC (or NAME) interactively; resources hot-reload and the spec recompiles
    between turns. The agent's own flags: harnessc dev NAME --help."""
    spec = _find_spec(spec)
    _check_agent_args("dev", spec, agent_args)
    argv = _agent_argv(agent_args)
    raise SystemExit(run_dev(spec, argv, out_dir, prog=_prog("dev", spec, out_dir)))


@cli.command("serve", context_settings={"ignore_unknown_options": True})
@click.argument("spec", metavar="SPEC|NAME")
@click.argument("agent_args", nargs=-1, type=click.UNPROCESSED)
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", default=8000, show_default=True, help="Port (0: any free one).")
@click.option("--token-env", metavar="NAME", help="Variable holding the bearer token.")
@click.option("--max-runs", default=64, show_default=True, help="Runs working at once.")
@click.option(
    "--max-connections", default=1024, show_default=True, help="Connections open at once."
)
@click.option(
    "--header-timeout",
    default=10.0,
    show_default=True,
    help="Seconds a client has to send a request's head.",
)
@click.option(
    "--body-timeout",
    default=30.0,
    show_default=True,
    help="Seconds a client has to send a request's body, after its head.",
)
@click.option(
    "--mcp",
    is_flag=True,
    help="Serve over MCP on stdin and stdout instead of HTTP (pip install 'harnessc[mcp]').",
)
@click.option(
    "--worker",
    is_flag=True,
    help="A spec with durable: this process takes runs from the queue too "
    "(--worker-id, --concurrency, --drain-s after --).",
)
@click.option("-o", "--out", "out_dir", default=DEFAULT_OUT, show_default=True, hidden=True)
@_guard
def serve(
    spec: str,
    agent_args: tuple[str, ...],
    host: str,
    port: int,
    token_env: str | None,
    max_runs: int,
    max_connections: int,
    header_timeout: float,
    body_timeout: float,
    mcp: bool,
    worker: bool,
    out_dir: str,
) -> None:
    """Serve SPEC (or NAME) over HTTP: native API, OpenAI-compatible, AG-UI, A2A, MCP
    (/mcp) and a dev page (pip install 'harnessc[serve]'), or with --mcp as an MCP server
    on stdin and stdout; the agent's own flags (--base-url...) after -- (harnessc serve NAME
    -- --help lists them)."""
    spec = _find_spec(spec)
    live = LiveAgent(spec, out_dir)
    if not live.load():
        click.echo(f"harnessc: {spec} has errors; not serving", err=True)
        raise SystemExit(1)
    argv = [*_agent_argv(agent_args), "--serve", "--host", host, "--port", str(port)]
    argv += ["--max-runs", str(max_runs), "--max-connections", str(max_connections)]
    argv += ["--header-timeout", str(header_timeout), "--body-timeout", str(body_timeout)]
    if mcp:
        argv.append("--mcp")
    if token_env:
        argv += ["--token-env", token_env]
    from harnessc.runtime import run_cli

    module = live.module
    assert module is not None
    if worker:
        durable = getattr(module, "durable_config", None)
        if durable is None:
            click.echo(f"harnessc: --worker serves a spec with durable:, {spec} has none", err=True)
            raise SystemExit(2)
        from harnessc.runtime import run_durable_cli

        raise SystemExit(
            run_durable_cli(
                module.build_options,
                [*argv, "--worker"],
                agent_name=live.agent_name,
                session_dir=live.session_dir,
                durable=durable,
                session_repo=getattr(module, "session_repo", None),
                prog="harnessc serve",
            )
        )
    code = run_cli(
        module.build_options,  # the module's own function: its DESCRIPTION names the agent card
        argv,
        agent_name=live.agent_name,
        session_dir=live.session_dir,
        prog="harnessc serve",
        session_repo=getattr(module, "session_repo", None),
    )
    raise SystemExit(code)


cli.add_command(sessions)  # export|import (PostgreSQL <-> JSONL), rewind, checkpoints, delete, gc


@cli.command("test")
@click.argument("paths", nargs=-1, type=click.Path())
@click.option(
    "--record",
    is_flag=True,
    help="Run against the real models (keys from the environment) and write the cassettes.",
)
@click.option(
    "--base-url",
    metavar="URL",
    help="With --record: send every model's requests to URL (default: $HARNESSC_BASE_URL); "
    "a server on this machine needs no key.",
)
@click.option("--junit", "junit_file", type=click.Path(dir_okay=False), help="Write JUnit XML.")
@click.option("-j", "--jobs", type=click.IntRange(min=1), help="Cases run at once (default: CPUs).")
@_guard
def test(
    paths: tuple[str, ...],
    record: bool,
    base_url: str | None,
    junit_file: str | None,
    jobs: int | None,
) -> None:
    """Run the cases of *.tests.yaml files (PATHS: files or folders; default: .) against
    their cassettes; exit 1 when one fails."""
    from harnessc.agenttests import junit_xml, run_tests, table
    from harnessc.runtime.runs.errors import SetupError
    from harnessc.runtime.runs.overrides import BASE_URL_VARIABLE, check_base_url

    url = base_url or os.environ.get(BASE_URL_VARIABLE) or None
    where = None
    if url:
        where = (url, "--base-url" if base_url else BASE_URL_VARIABLE)
        try:
            check_base_url(*where)
        except SetupError as exc:
            raise click.UsageError(str(exc)) from None
    run = run_tests(list(paths), record=record, jobs=jobs, base_url=where)
    for problem in run.problems:
        click.echo(problem, err=True)
    if run.results:
        click.echo(table(run.results))
    if junit_file is not None:
        junit_xml(run.results, Path(junit_file))
    if not run.ok:
        raise SystemExit(1)


@cli.command("doctor")
@click.argument("spec", metavar="SPEC|NAME")
@click.option("--base-url", metavar="URL", help="Check every model at URL instead.")
@click.option("-o", "--out", "out_dir", default=DEFAULT_OUT, show_default=True, hidden=True)
@_guard
def doctor_command(spec: str, base_url: str | None, out_dir: str) -> None:
    """Check each model of SPEC (its key variable, that its endpoint answers, its model id),
    each MCP server (it starts, initializes and lists its tools within its timeout) and,
    with durable:, its database, schema, queue and live workers; say where sessions go and
    whether this machine can enforce the sandbox (and exactly why not)."""
    from harnessc.doctor import doctor
    from harnessc.doctor_mcp import doctor_mcp
    from harnessc.runtime.runs.errors import SetupError
    from harnessc.runtime.runs.overrides import BASE_URL_VARIABLE, override_base_url
    from harnessc.runtime.session import Session

    spec = _find_spec(spec)
    live = LiveAgent(spec, out_dir)
    if not live.load():
        click.echo(f"harnessc: {spec} has errors; run `harnessc check {spec}`", err=True)
        raise SystemExit(1)
    options = live.build_options(session=Session(), cwd=os.getcwd())
    url = base_url or os.environ.get(BASE_URL_VARIABLE)
    if url:
        try:
            override_base_url(options, url, "--base-url" if base_url else BASE_URL_VARIABLE)
        except SetupError as exc:
            raise click.UsageError(str(exc)) from None
    durable = getattr(live.module, "durable_config", None)

    def checks() -> list[tuple[str, str]]:
        found = _sessions_check(live.session_dir, os.getcwd())
        found += _sandbox_check(options.sandbox)
        if durable is not None:
            from harnessc.runtime.durable.health import durable_checks

            found += durable_checks(durable, os.getcwd())
        return found

    models = doctor(dict(options.models), click.echo, checks)
    raise SystemExit(max(models, doctor_mcp(options.extensions or (), click.echo)))


def _sandbox_check(policy: Any) -> list[tuple[str, str]]:
    """Whether this machine can enforce the agent's sandbox, and exactly why not."""
    from harnessc.runtime.sandbox import probe

    if policy is None or not policy.enabled:
        return [("warning", "sandbox: off: bash, hooks and MCP servers run with your rights")]
    found = probe()
    if found.available:
        return [("ok", f"sandbox {policy.mode}: {found.reason}")]
    if policy.mode == "on":
        return [("error", f"sandbox on: this machine cannot enforce it: {found.reason}")]
    return [
        (
            "warning",
            f"sandbox auto: programs will run WITHOUT a sandbox here: {found.reason}",
        )
    ]


def _sessions_check(setting: Any, cwd: str) -> list[tuple[str, str]]:
    """Where the agent's session files go (none for sessions in memory or PostgreSQL)."""
    from harnessc.runtime.support.data_folder import (
        LEGACY_FOLDER,
        DataFolder,
        project_data_dir,
        resolve_folder,
    )

    if setting is None:
        return []
    folder = resolve_folder(setting, cwd)
    if isinstance(setting, DataFolder) and folder.parent == Path(cwd, LEGACY_FOLDER):
        target = project_data_dir(cwd)
        return [
            (
                "warning",
                f"sessions: {folder} (an older harnessc's folder, still used); move it to "
                f"{target}/ to keep it out of the project (docs/sessions.md)",
            )
        ]
    return [("ok", f"sessions: {folder}")]


@cli.command("serve-demo")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", default=8765, show_default=True, help="Port (0: any free one).")
@_guard
def serve_demo(host: str, port: int) -> None:
    """A key-free local demo model (OpenAI-compatible) to try agents with; Ctrl-C stops it."""
    from harnessc.testing.demo import main as demo_main

    raise SystemExit(demo_main(["--host", host, "--port", str(port)], prog="harnessc serve-demo"))


def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``harnessc`` script."""
    cli.main(args=argv, prog_name="harnessc")
