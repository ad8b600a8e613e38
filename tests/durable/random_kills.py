"""Random SIGKILLs during an approved batch of slow tools (issue 11's own measurement:
"across 300 random SIGKILLs, 26 calls that a person had approved never ran").

One trial: the child (``_approval_kill_child.py``) approves three dangerous calls one
by one and runs them, and is killed at a random moment: right after its k-th approval
(k random) plus a random delay. A new runtime restores the session and finishes the
run: it approves what was still pending, decides each in-doubt call as done. What each
trial must show:

- a decision acknowledged before the kill stands (that call is not asked again);
- an approved call whose operation never reached ``executing`` is not in doubt and runs
  exactly once after the restore;
- only a call whose ``executing`` was committed is ever in doubt (it may have begun:
  the kill can fall between that commit and the tool's first line);
- no call runs twice, and the run completes with every call answered;
- every event a listener of the killed process received is in the outbox
  (``read_events``) after the kill (issue 26: announced only after its commit).

Used by tests/durable/test_random_kills.py (a few trials) and benchmarks/random_kills.py
(hundreds, with counts).
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import arknb as ark

from ._approval_kill_child import CALLS, make_tools, open_store

CHILD = Path(__file__).with_name("_approval_kill_child.py")

__all__ = ["Trial", "run_trial"]


@dataclass
class Trial:
    """What one trial saw."""

    killed_after: float
    approved_before_kill: set[str] = field(default_factory=set)
    executing_recorded: set[str] = field(default_factory=set)  # operations with an attempt at the kill
    asked_again: set[str] = field(default_factory=set)
    began: set[str] = field(default_factory=set)        # calls with a start line before the kill
    finished: set[str] = field(default_factory=set)     # calls with an end line before the kill
    in_doubt: set[str] = field(default_factory=set)
    ran_after_restore: set[str] = field(default_factory=set)
    starts: Counter = field(default_factory=Counter)     # every start, both processes
    stop_reason: str = ""
    answered: set[str] = field(default_factory=set)
    announced: int = 0                                   # events a listener of the child received
    announced_missing: list[str] = field(default_factory=list)  # of those, not in read_events()
    problems: list[str] = field(default_factory=list)


def _lines(directory: Path) -> list[tuple[str, str]]:
    path = directory / "effects.log"
    if not path.exists():
        return []
    return [tuple(line.split(" ", 1)) for line in path.read_text().splitlines() if line]


def _announced(directory: Path) -> list[tuple[str, str]]:
    path = directory / "announced.log"
    if not path.exists():
        return []
    lines = path.read_text().splitlines()
    return [tuple(line.split(" ", 1)) for line in lines if line.count(" ") == 1]  # a torn last line is no event


async def run_trial(directory: Path, kind: str, seed: int, *, max_delay: float = 0.6,
                    kill_on_event: int | None = None) -> Trial:
    """Run one trial in ``directory`` (empty) and check its invariants (``Trial.problems``).

    With ``kill_on_event=k`` the child kills itself as its listener receives the k-th event
    (instead of being killed after a random approval and delay)."""
    rng = random.Random(seed)
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    extra = [str(kill_on_event)] if kill_on_event is not None else []
    proc = await asyncio.create_subprocess_exec(sys.executable, str(CHILD), kind, str(directory), str(seed), *extra,
                                                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
                                                env=env)
    approved: set[str] = set()
    target = rng.randint(1, len(CALLS))
    delay = 0.0
    try:
        if kill_on_event is not None:
            while True:  # until it kills itself (or is done with fewer events than k)
                line = (await asyncio.wait_for(proc.stdout.readline(), 120)).decode().split()
                if not line or line[0] == "DONE":
                    break
                if line[0] == "APPROVED":
                    approved.add(line[2])
        while kill_on_event is None and len(approved) < target:
            line = (await asyncio.wait_for(proc.stdout.readline(), 120)).decode().split()
            if len(line) != 3 or line[0] != "APPROVED":
                raise AssertionError((line, (await proc.stderr.read()).decode()[-2000:]))
            approved.add(line[2])
        if kill_on_event is None:
            delay = rng.uniform(0.0, max_delay if target == len(CALLS) else 0.05)
            await asyncio.sleep(delay)
    finally:
        if proc.returncode is None:
            proc.send_signal(signal.SIGKILL)
        await proc.wait()
    # (a decision printed after the target is ignored: the kill may have come first)
    trial = Trial(killed_after=delay, approved_before_kill=approved)
    for kind_of, call_id in _lines(directory):
        (trial.began if kind_of == "start" else trial.finished).add(call_id)
    reader = open_store(kind, directory)
    try:
        in_outbox = {event.event_id for event in await reader.read_events("s1")}
        heard = _announced(directory)
        trial.announced = len(heard)
        trial.announced_missing = [f"{event_id} {event_type}" for event_id, event_type in heard
                                   if event_id not in in_outbox and event_type != "llm.chunk"]
        for operation in await reader.list_operations("s1"):
            if operation.kind == "tool_call" and operation.attempts:
                trial.executing_recorded.add(operation.purpose_key.rsplit(":", 1)[-1])
    finally:
        await reader.aclose()
    if trial.announced_missing:
        trial.problems.append(f"{len(trial.announced_missing)} announced event(s) missing from the outbox: "
                              f"{trial.announced_missing[:5]}")
    store = open_store(kind, directory)
    try:
        runtime = await ark.AgentRuntime.restore("s1", storage=store, model=ark.ScriptedModel(["All sent."]),
                                                 tools=make_tools(directory))
    except ark.ArkError as exc:
        if hasattr(store, "aclose"):
            await store.aclose()
        if exc.code != "session_not_found" or approved:
            raise
        return trial  # killed before its first save (the listener's first events): nothing to restore
    try:
        trial.in_doubt = {item.tool_call.id for item in runtime.controller.list_in_doubt()}
        for item in runtime.controller.list_pending_approvals():
            if item.kind == "in_doubt":
                continue  # decided below, with the in-doubt calls' own choices
            if item.tool_call.id in trial.approved_before_kill:
                trial.asked_again.add(item.tool_call.id)
            decided = await runtime.controller.approve(item.approval_id)
            if not decided.ok:
                trial.problems.append(f"approve after restore failed: {decided.error}")
        for item in runtime.controller.list_in_doubt():
            decided = await runtime.controller.mark_done(item.operation_id, "checked by hand: it was sent")
            if not decided.ok:
                trial.problems.append(f"mark_done failed: {decided.error}")
        state = runtime.state
        if runtime.current_run is not None:
            result = await asyncio.wait_for(runtime.current_run.wait(), 120)
        elif state.is_running:
            result = await asyncio.wait_for(runtime.resume(), 120)
        else:
            result = runtime.last_result
        trial.stop_reason = result.stop_reason if result is not None else (state.last_stop_reason or "")
        trial.answered = {m.tool_call_id for m in runtime.history if m.role == "tool"}
    finally:
        await runtime.aclose()
        if hasattr(store, "aclose"):
            await store.aclose()
    trial.starts = Counter(call_id for kind_of, call_id in _lines(directory) if kind_of == "start")
    trial.ran_after_restore = {c for c in CALLS if trial.starts[c] > (1 if c in trial.began else 0)}
    for call_id in CALLS:
        if call_id in trial.asked_again:
            trial.problems.append(f"{call_id} was approved before the kill and asked again")
        if call_id in trial.in_doubt and call_id not in trial.executing_recorded:
            trial.problems.append(f"{call_id} was in doubt but its executing was never committed")
        if call_id not in trial.executing_recorded and trial.starts[call_id] != 1:
            trial.problems.append(f"{call_id} never reached executing, then ran {trial.starts[call_id]} times")
        if call_id in trial.began and call_id not in trial.executing_recorded:
            trial.problems.append(f"{call_id} began with no executing record")
        if trial.starts[call_id] > 1:
            trial.problems.append(f"{call_id} ran {trial.starts[call_id]} times")
    if trial.stop_reason != "completed":
        trial.problems.append(f"the restored run ended {trial.stop_reason}")
    if trial.answered != set(CALLS):
        trial.problems.append(f"answered {sorted(trial.answered)}")
    return trial
