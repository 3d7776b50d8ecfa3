"""The settings of durable runs (spec ``durable:``), resolved for one process."""

from __future__ import annotations

import os
import re
import socket
from dataclasses import dataclass

from harnessc.runtime.support.data_folder import make_folder, project_path

__all__ = ["DurableConfig", "DurableError", "default_worker_id", "resolve_database_url"]


class DurableError(Exception):
    """A durable run, worker or client cannot do what was asked (a clear message)."""


@dataclass(slots=True, frozen=True)
class DurableConfig:
    """What the generated ``durable_config()`` returns."""

    engine: str = "dbos"
    database_url: str = ""  # empty: durable.sqlite in the project's data folder
    queue: str = "harnessc"
    concurrency: int = 8
    lease_s: float = 30.0
    # a call with outside effects whose worker stopped while it ran: "fail" gives the
    # model an error result (at most once), "rerun" runs it again (at least once)
    interrupted_tools: str = "fail"

    def app_name(self) -> str:
        """DBOS's application name: the queue name made lower-case and safe."""
        name = re.sub(r"[^a-z0-9_-]", "-", self.queue.lower()).strip("-") or "harnessc"
        return ("hx-" + name)[:64]


def resolve_database_url(url: str, cwd: str | None = None, *, create: bool = True) -> str:
    """``url`` with a relative SQLite path made absolute against ``cwd`` (its folder
    created, with a .gitignore, unless ``create`` is false); other URLs unchanged. An
    empty ``url``: ``durable.sqlite`` in the data folder of the project ``cwd`` is in."""
    if not url:
        url = "sqlite:///" + str(project_path("durable.sqlite", cwd))
    if not url.startswith("sqlite:"):
        if not re.match(r"^postgres(ql)?(\+psycopg)?://", url):
            raise DurableError(
                "durable.database_url must be sqlite:///PATH or postgresql://..., not "
                f"{url.split(':', 1)[0]!r}"
            )
        return url
    match = re.match(r"^sqlite:///(.*)$", url)
    if match is None or not match.group(1):
        raise DurableError(f"durable.database_url {url!r} is not sqlite:///PATH")
    path = match.group(1)
    if not os.path.isabs(path):
        path = os.path.join(os.path.abspath(cwd or os.getcwd()), path)
    if create:
        make_folder(os.path.dirname(path) or ".")
    return "sqlite:///" + path


def default_worker_id() -> str:
    """A stable worker id for this machine: ``<host>``."""
    host = re.sub(r"[^A-Za-z0-9_.-]", "-", socket.gethostname()) or "worker"
    return host[:60]
