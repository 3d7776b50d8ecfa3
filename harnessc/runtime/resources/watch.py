"""Hot reload of skills, prompt templates and context files (watchfiles, imported only
when started).

A file that stops parsing keeps its last good version (with a diagnostic) until it is
fixed or deleted. Watched folders may be deleted and recreated: the watcher notices
and watches them again. Context files live in the working directory's ancestors, which
are not watched recursively: their few candidate paths are checked (stat) on every
timeout tick of the watch instead.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import os
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from typing import Any

from harnessc.runtime.resources.context_files import context_signature, load_context_files
from harnessc.runtime.resources.skills import LoadedFile, merge_skills, scan_skills
from harnessc.runtime.resources.templates import merge_templates, scan_templates
from harnessc.runtime.resources.types import (
    AgentHarnessResources,
    ContextFile,
    ContextFileSettings,
    ResourceDiagnostic,
)

__all__ = ["OnResourcesChange", "ResourceWatcher"]

log = logging.getLogger(__name__)

OnResourcesChange = Callable[
    [AgentHarnessResources, list[ResourceDiagnostic]], Awaitable[None] | None
]
PathLike = str | os.PathLike[str]


def _keep_last_good(
    files: list[LoadedFile], good: dict[str, Any], kind: str
) -> tuple[list[LoadedFile], dict[str, Any]]:
    """Put back the previous item of every file that now fails; returns new good map."""
    out: list[LoadedFile] = []
    new_good: dict[str, Any] = {}
    for loaded in files:
        if loaded.item is not None:
            new_good[loaded.path] = loaded.item
            out.append(loaded)
        elif loaded.failed and loaded.path in good:
            previous = good[loaded.path]
            new_good[loaded.path] = previous
            note = ResourceDiagnostic(
                "warning",
                f"kept the previous version of {kind} {previous.name!r} until this file is fixed",
                loaded.path,
            )
            out.append(LoadedFile(loaded.path, previous, [*loaded.diagnostics, note]))
        else:
            out.append(loaded)
    return out, new_good


class ResourceWatcher:
    """Watch skill and template folders; call ``on_change(resources, diagnostics)``.

    ``on_change`` runs after a debounced batch of changes actually changed the loaded
    resources (it may be async). ``debounce_ms`` bounds how long a burst of file events
    is grouped. ``context_files``: also reread the context files for ``cwd`` when one of
    their candidate paths changes (checked every ``poll_interval_ms``).
    """

    def __init__(
        self,
        skill_dirs: Iterable[PathLike],
        template_dirs: Iterable[PathLike],
        on_change: OnResourcesChange,
        debounce_ms: int = 50,
        *,
        step_ms: int = 10,
        poll_interval_ms: int = 200,
        force_polling: bool | None = None,
        context_files: ContextFileSettings | None = None,
        cwd: PathLike | None = None,
    ) -> None:
        self.skill_dirs = [os.path.abspath(os.fspath(p)) for p in skill_dirs]
        self.template_dirs = [os.path.abspath(os.fspath(p)) for p in template_dirs]
        self.on_change = on_change
        self.debounce_ms = max(1, int(debounce_ms))
        self.step_ms = max(1, min(int(step_ms), self.debounce_ms))
        self.poll_interval_ms = max(10, int(poll_interval_ms))
        self.force_polling = force_polling
        self.context_settings = context_files
        self.cwd = os.path.abspath(os.fspath(cwd)) if cwd is not None else os.getcwd()
        self.resources = AgentHarnessResources(
            skill_dirs=list(self.skill_dirs), template_dirs=list(self.template_dirs)
        )
        self._context_seen: tuple[object, ...] = ()
        self._good_skills: dict[str, Any] = {}
        self._good_templates: dict[str, Any] = {}
        self._stop: asyncio.Event | None = None
        self._task: asyncio.Task[None] | None = None
        self._seeded = False
        self.reload_count = 0

    # -- loading ---------------------------------------------------------------

    def reload(self) -> AgentHarnessResources:
        """Load everything now, keeping last good versions of broken files."""
        skill_files, skill_diags = scan_skills(self.skill_dirs)
        skill_files, self._good_skills = _keep_last_good(skill_files, self._good_skills, "skill")
        skills, more_skill_diags = merge_skills(skill_files)
        template_files, template_diags = scan_templates(self.template_dirs)
        template_files, self._good_templates = _keep_last_good(
            template_files, self._good_templates, "template"
        )
        templates, more_template_diags = merge_templates(template_files)
        settings = self.context_settings
        files: list[ContextFile] = []
        context_diags: list[ResourceDiagnostic] = []
        if settings is not None:
            self._context_seen = context_signature(settings, self.cwd)
            files, context_diags = load_context_files(settings, self.cwd)
        self.reload_count += 1
        return AgentHarnessResources(
            prompt_templates=templates,
            skills=skills,
            diagnostics=skill_diags
            + more_skill_diags
            + template_diags
            + more_template_diags
            + context_diags,
            skill_dirs=list(self.skill_dirs),
            template_dirs=list(self.template_dirs),
            context_files=files,
            context_settings=settings,
            cwd=self.cwd if settings is not None else None,
        )

    def _context_changed(self) -> bool:
        """A context file appeared, changed or vanished since the last reload."""
        settings = self.context_settings
        return settings is not None and context_signature(settings, self.cwd) != (
            self._context_seen
        )

    def seed(self, resources: AgentHarnessResources) -> None:
        """Start from already loaded resources (their items count as last good versions)."""
        self.resources = resources
        self._seeded = True
        self._good_skills = {s.file_path: s for s in resources.skills}
        self._good_templates = {t.file_path: t for t in resources.prompt_templates}

    async def _changed(self) -> None:
        resources = await asyncio.to_thread(self.reload)
        if _same(resources, self.resources):
            return
        self.resources = resources
        try:
            outcome = self.on_change(resources, list(resources.diagnostics))
            if inspect.isawaitable(outcome):
                await outcome
        except Exception:  # a failing listener must not stop the watcher
            log.exception("resource on_change callback failed")

    # -- watching --------------------------------------------------------------

    def _roots(self) -> tuple[tuple[str, int, int], ...]:
        """The existing folders to watch, with identities (to notice delete + recreate)."""
        roots: dict[str, tuple[str, int, int]] = {}
        for raw in [*self.skill_dirs, *self.template_dirs]:
            path = Path(raw)
            folder = path if path.is_dir() else path.parent if path.exists() else None
            if folder is None:
                continue
            try:
                st = folder.stat()
            except OSError:
                continue
            roots[str(folder)] = (str(folder), st.st_dev, st.st_ino)
        # a folder inside another watched folder is covered by the recursive watch
        names = sorted(roots)
        kept = [
            n for n in names if not any(n != o and n.startswith(o.rstrip("/") + "/") for o in names)
        ]
        return tuple(roots[n] for n in kept)

    def _missing(self) -> bool:
        return any(not os.path.exists(p) for p in [*self.skill_dirs, *self.template_dirs])

    async def start(self) -> None:
        """Load once, then watch in a background task until ``stop()``."""
        if self._task is not None:
            return
        try:
            import watchfiles  # noqa: F401 - only needed while watching
        except ImportError as exc:  # pragma: no cover - watchfiles is a dependency
            raise RuntimeError("hot reload needs the 'watchfiles' package") from exc
        if not self._seeded:
            self.seed(await asyncio.to_thread(self.reload))
        self._stop = asyncio.Event()
        self._task = asyncio.create_task(self._run(), name="harnessc-resource-watcher")

    async def stop(self) -> None:
        """Stop watching and wait for the background task to end."""
        task, stop = self._task, self._stop
        self._task = None
        if task is None or stop is None:
            return
        stop.set()
        try:
            await asyncio.wait_for(asyncio.shield(task), timeout=2.0)
        except TimeoutError:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        except Exception:
            log.exception("resource watcher failed")

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    async def _run(self) -> None:
        import watchfiles

        assert self._stop is not None
        stop = self._stop
        while not stop.is_set():
            roots = self._roots()
            if not roots:
                with contextlib.suppress(TimeoutError, asyncio.TimeoutError):
                    await asyncio.wait_for(stop.wait(), self.poll_interval_ms / 1000)
                if not stop.is_set() and (self._roots() != roots or self._context_changed()):
                    await self._changed()
                continue
            try:
                first = True
                async for changes in watchfiles.awatch(
                    *[r[0] for r in roots],
                    stop_event=stop,
                    debounce=self.debounce_ms,
                    step=self.step_ms,
                    rust_timeout=self.poll_interval_ms,
                    yield_on_timeout=True,
                    force_polling=self.force_polling,
                    ignore_permission_denied=True,
                ):
                    if changes or first or self._context_changed():
                        # the first tick also catches edits made while the watch started
                        first = False
                        await self._changed()
                    if self._roots() != roots:
                        await self._changed()
                        break
            except Exception as exc:  # e.g. a folder vanished while the watch started
                log.debug("resource watch restarting: %s", exc)
                with contextlib.suppress(TimeoutError, asyncio.TimeoutError):
                    await asyncio.wait_for(stop.wait(), self.poll_interval_ms / 1000)


def _same(a: AgentHarnessResources, b: AgentHarnessResources) -> bool:
    return (
        a.skills == b.skills
        and a.prompt_templates == b.prompt_templates
        and a.diagnostics == b.diagnostics
        and a.context_files == b.context_files
    )
