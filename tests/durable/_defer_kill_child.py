"""Child of the self-deferral kill tests (tests/durable/test_defer_kill.py).

A parent on an ``SQLiteStore`` runs a batch in which one call defers itself while it
runs (``ToolContext.defer``); the child prints ``READY <point>`` at the moment the
deferring call's operation is committed and the pending batch is not saved yet (the
seam's save of a state holding the pending batch is where it stops), then blocks until
SIGKILL. Every tool appends one line to a side-effect file (see the kit).

Points:

- ``delegate``: the parent's batch is ``p0`` (``count_files``) and ``d1``
  (``delegate_task`` to the cleaner, who counts, then needs approval to clear); killed
  before the parent's first pending batch is saved.
- ``delegate_second``: the cleaner asks two approvals in two turns; the first is saved,
  listed and approved at the parent (the child clears the first folder and asks the
  second), and the child is killed before the parent's second pending batch is saved.
- ``plain``: the parent's batch is ``p0`` and ``t1`` (``transfer``, which stages the
  transfer and defers itself to a person; run again it carries the staged transfer out).
- ``plain_second``: ``transfer`` needs two confirmations; the first pause is saved and
  approved, the call runs again and defers again, and the child is killed before the
  second pause is saved.
- ``plain_decided``: the control case. The pause of ``plain`` is saved and a person
  approves it; the child is killed as the decided batch starts, before ``t1``'s next
  attempt commits anything (the decision is saved, nothing ran).

Usage: python _defer_kill_child.py <directory> <point>
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import arknb as ark  # noqa: E402
from arknb.durable.runtime_seam import DurableInvocations  # noqa: E402
from arknb.durable import OperationStatus  # noqa: E402
from tests.durable._defer_kit import parent_runtime  # noqa: E402

POINTS = ("delegate", "delegate_second", "plain", "plain_second", "plain_decided")
DEFERRING = {"delegate": "d1", "delegate_second": "d1.a1", "plain": "t1", "plain_second": "t1.a1"}


def stop_before_pending_save(store, point: str) -> None:
    """SIGKILL point: the parent's seam saves a state with its pending batch (the last of
    them for ``delegate_second``); the deferring call's operation is committed by then."""
    save = DurableInvocations.save
    wanted = 2 if point in ("delegate_second", "plain_second") else 1
    seen = []

    async def stopping_save(self, state, *, reason, mandatory, **more):
        if self.session_id == "boss" and state.pending_approval is not None:
            seen.append(state.pending_approval.batch_id)
            if len(seen) == wanted:
                operation = await store.find_operation("boss", f"{state.current_run_id}:{DEFERRING[point]}")
                assert operation is not None and operation.completed, operation
                assert operation.status is OperationStatus.SUCCEEDED, operation
                print(f"READY {point}", flush=True)
                await asyncio.Event().wait()  # until SIGKILL
        return await save(self, state, reason=reason, mandatory=mandatory, **more)

    DurableInvocations.save = stopping_save


def stop_when_the_decided_batch_runs() -> None:
    """SIGKILL point of ``plain_decided``: the parent's second tool batch starts (after the
    approval's save), before its operations are committed."""
    run_tools = DurableInvocations.run_tools
    batches = []

    async def stopping_run_tools(self, batch):
        if self.session_id == "boss":
            batches.append(batch.batch_id)
            if len(batches) == 2:
                print("READY plain_decided", flush=True)
                await asyncio.Event().wait()  # until SIGKILL
        return await run_tools(self, batch)

    DurableInvocations.run_tools = stopping_run_tools


async def main(directory: str, point: str) -> None:
    folder = Path(directory)
    store = ark.SQLiteStore(folder / "arknb.sqlite3")
    if point == "plain_decided":
        stop_when_the_decided_batch_runs()
    else:
        stop_before_pending_save(store, point)
    parent = parent_runtime(folder, store, "plain" if point == "plain_decided" else point, first_process=True)
    result = await parent.run("Free some disk space.")
    if point in ("delegate_second", "plain_second", "plain_decided"):
        # The first pause is saved: a person approves the cleaner's first call at the parent.
        pending = parent.controller.list_pending_approvals()
        assert result.stop_reason == "awaiting_approval" and len(pending) == 1, (result, pending)
        decided = await parent.controller.approve(pending[0].approval_id)
        assert decided.ok and decided.all_decided, decided
        print(f"DECIDED {pending[0].approval_id}", file=sys.stderr, flush=True)
        result = await parent.current_run.wait()
    print(f"UNEXPECTED {result.stop_reason} {result.error}", flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
