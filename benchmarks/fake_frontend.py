"""A fake Jupyter front end for kernel-side widget benchmarks.

ipywidgets creates its comm through ``comm.create_comm``. Outside a kernel that
returns a ``DummyComm`` that drops messages without serialising them, which would
hide the real kernel-side cost. :func:`install` replaces it with :class:`CountingComm`,
which JSON-encodes every message the way the kernel's session does before sending it
and counts the messages and bytes that would leave the kernel.
"""

from __future__ import annotations

import json
import time
from typing import Any

import comm
from comm.base_comm import BaseComm

__all__ = ["CountingComm", "Traffic", "install"]


class Traffic:
    """What left the kernel, over every comm created since :func:`install`."""

    def __init__(self) -> None:
        self.messages = 0
        self.bytes = 0
        self.times: list[float] = []

    def reset(self) -> None:
        self.messages = 0
        self.bytes = 0
        self.times.clear()

    def record(self, size: int) -> None:
        self.messages += 1
        self.bytes += size
        self.times.append(time.perf_counter())


TRAFFIC = Traffic()


class CountingComm(BaseComm):
    def publish_msg(self, msg_type: str, data: Any = None, metadata: Any = None,
                    buffers: Any = None, **keys: Any) -> None:
        content = json.dumps({"msg_type": msg_type, "comm_id": self.comm_id, "data": data or {},
                              "metadata": metadata or {}}, default=str)
        TRAFFIC.record(len(content) + sum(len(b) for b in buffers or ()))


def install() -> Traffic:
    comm.create_comm = lambda *args, **kwargs: CountingComm(*args, **kwargs)
    return TRAFFIC
