"""Subject (a'): the floor of (a) with the sync tool on a worker thread.

The same bare loop as ``bare.py``, but the blocking ``add`` runs through
``asyncio.to_thread``, as arknb and every peer run a sync tool (in a notebook, a
blocking call on the event loop would freeze the widgets). The difference between
(a) and (a') is what the thread hand-off alone costs on this machine."""

from __future__ import annotations

import functools
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bare import make  # noqa: E402  (this folder is sys.path[0] when run as a script)
from workload import main  # noqa: E402

if __name__ == "__main__":
    main("bare+thread", functools.partial(make, threaded=True))
