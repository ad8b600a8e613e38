"""Child process of test_user_requests.py: a user's own request type on an InvocationBus
over SQLiteStore. It begins ``email.send`` for purpose ``r1:mail``, prints READY once the
handler runs (and has appended to effects.log), then blocks until SIGKILL. With
``limited`` it begins three (``r1:mail0`` .. ``r1:mail2``) with ``request_many(...,
concurrency=1)``: the first handler blocks, the other two wait for their turn.

Usage: python _bus_child.py <dir> [limited]
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import arknb as ark
from arknb.durable import EventRequest, InvocationBus


async def main(directory: str, limited: bool) -> None:
    store = ark.SQLiteStore(Path(directory) / "arknb.sqlite3")
    bus = InvocationBus(store, session_id="s1", run_id="r1")

    async def send(request: EventRequest):
        with open(Path(directory) / "effects.log", "a") as log:
            log.write(f"send {request.idempotency_key}\n")
            log.flush()
        print("READY", flush=True)
        await asyncio.Event().wait()  # until SIGKILL

    bus.register_handler("email.send", 1, send)
    if limited:
        await bus.request_many([EventRequest("email.send", 1, {"to": f"{i}@example.org"}, f"r1:mail{i}")
                                for i in range(3)], concurrency=1)
    else:
        await bus.request(EventRequest("email.send", 1, {"to": "a@example.org"}, "r1:mail"))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2:] == ["limited"]))
