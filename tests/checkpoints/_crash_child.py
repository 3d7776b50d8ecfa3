"""A process that takes a checkpoint or rewinds, killed by SIGKILL at the point the
test names (``HARNESSC_CHECKPOINT_CRASH``).

    _crash_child.py take STORE WORKSPACE
    _crash_child.py rewind STORE WORKSPACE CHECKPOINT_JSON
"""

from __future__ import annotations

import json
import sys

from harnessc.runtime.checkpoints import Checkpoint, CheckpointStore, Workspace


def main() -> None:
    action, store_root, root = sys.argv[1:4]
    workspace = Workspace(CheckpointStore(store_root), root)
    if action == "take":
        checkpoint = workspace.take("before", session_id="s")
        print(json.dumps(checkpoint.to_dict()))
    else:
        target = Checkpoint.from_dict(json.loads(sys.argv[4]))
        assert target is not None
        plan = workspace.plan(target)
        with workspace.restore(plan, session_id="s", about={"session": "s", "mode": "files"}):
            pass
        print("rewound")


if __name__ == "__main__":
    main()
