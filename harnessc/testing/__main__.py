"""``python -m harnessc.testing``: the key-free demo model server (see ``demo``)."""

from harnessc.testing.demo import main

raise SystemExit(main())
