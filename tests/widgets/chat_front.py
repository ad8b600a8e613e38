"""A Python mirror of the chat front end's store (js/src/chat.js): it folds the snapshot
trait and the numbered ``delta`` messages exactly as the browser does, so a test can
check that what a view ends up with equals the kernel's transcript."""

from __future__ import annotations

import copy
import json
from typing import Any


class ChatFront:
    """Captures what a ChatWidget sends and keeps the transcript a view would show."""

    def __init__(self, chat: Any) -> None:
        self.messages: list[dict[str, Any]] = []
        self.snapshots: list[dict[str, Any]] = []
        self.bytes = 0
        self.entries: list[dict[str, Any]] = []
        self.seq = -1
        self.gaps = 0
        # Several views of one widget (two tabs) all receive what it sends.
        fronts = getattr(chat, "_test_fronts", None)
        if fronts is None:
            fronts = chat._test_fronts = []
            chat.send = lambda content, buffers=None: [f._on_send(content) for f in fronts]
        fronts.append(self)
        chat.observe(self._on_snapshot, names=["_snapshot"])
        self._take(chat._snapshot)

    def _on_send(self, content: dict[str, Any], buffers: Any = None) -> None:
        self.messages.append(content)
        self.bytes += len(json.dumps(content))
        if content.get("type") == "delta":
            self.apply(content)

    def _on_snapshot(self, change: dict[str, Any]) -> None:
        self.snapshots.append(change["new"])
        self.bytes += len(json.dumps(change["new"]))
        self._take(change["new"])

    def _take(self, snap: dict[str, Any]) -> None:
        if not snap:
            return
        self.entries = copy.deepcopy(snap.get("entries") or [])
        self.seq = int(snap.get("seq", 0))

    def apply(self, msg: dict[str, Any]) -> str:
        seq = msg.get("seq")
        if seq <= self.seq:
            return "skipped"
        if seq != self.seq + 1:
            self.gaps += 1
            return "gap"
        self.seq = seq
        by_id = {e["id"]: e for e in self.entries}
        for op in msg["ops"]:
            if op[0] == "add":
                if op[1]["id"] in by_id:
                    by_id[op[1]["id"]].clear()
                    by_id[op[1]["id"]].update(copy.deepcopy(op[1]))
                else:
                    entry = copy.deepcopy(op[1])
                    self.entries.append(entry)
                    by_id[entry["id"]] = entry
            elif op[0] == "patch":
                by_id[op[1]].update(copy.deepcopy(op[2]))
            else:
                field, eid, start, end, text = op
                entry = by_id[eid]
                have = len(entry.get(field) or "")
                assert start == have, f"stream gap on {eid}.{field}: have {have}, op starts at {start}"
                entry[field] = (entry.get(field) or "") + text
        return "applied"

    def of_type(self, kind: str) -> list[dict[str, Any]]:
        return [m for m in self.messages if m.get("type") == kind]

    def ops(self) -> list[list[Any]]:
        return [op for m in self.of_type("delta") for op in m["ops"]]
