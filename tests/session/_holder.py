"""Test helper process: open a session for appending and hold it until stdin closes."""

from __future__ import annotations

import os
import sys

from harnessc.runtime.core.messages import UserMessage
from harnessc.runtime.session import JsonlSessionRepo


def main() -> None:
    root, target = sys.argv[1], sys.argv[2]
    session = JsonlSessionRepo(root).open(target)
    session.append_message(UserMessage("from the holder"))
    print(f"ready {os.getpid()}", flush=True)
    sys.stdin.read()
    session.close()


if __name__ == "__main__":
    main()
