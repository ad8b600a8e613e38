"""What the self-deferral kill tests and their child share: the parent runtime of each
point, its tools and scripts. Tools append a line per execution to files in the test's
directory: ``counted.log`` (``count_files``), ``effects.log`` (the cleaner's
``clear_cache``), ``transfers.log`` (``transfer``: ``staged`` when it defers,
``confirm`` when it defers again, ``transferred`` when it carries a staged transfer out)."""

from __future__ import annotations

from pathlib import Path

import arknb as ark
from arknb import ScriptedTurn
from tests.memory._subagent_kit import call, cleaner, effect_tools

__all__ = ["CLEANER_FIRST", "CLEANER_REST", "PARENT_REST", "parent_runtime", "transfer_tool"]

CLEANER_FIRST = {
    "delegate": [ScriptedTurn(text="Counting first.", tool_calls=[call("k0", "count_files", path="/tmp/cache")]),
                 ScriptedTurn(text="Clearing it.", tool_calls=[call("k1", "clear_cache", path="/tmp/cache")])],
    "delegate_second": [ScriptedTurn(text="First one.", tool_calls=[call("k1", "clear_cache", path="/tmp/a")]),
                        ScriptedTurn(text="Second one.", tool_calls=[call("k2", "clear_cache", path="/tmp/b")])],
}
"""The cleaner's turns the killed process uses (it stops awaiting approval after the last)."""
CLEANER_REST = {"delegate": ["The cache at /tmp/cache is cleared."], "delegate_second": ["Both caches are cleared."]}
"""The cleaner's turns after the restore."""
PARENT_REST = {"delegate": "The cleaner freed the space.", "delegate_second": "The cleaner freed the space.",
               "plain": "The money is sent.", "plain_second": "The money is sent."}


def transfer_tool(directory: Path, confirmations: int = 1) -> ark.Tool:
    """``transfer`` stages a transfer and hands it to a person (``ctx.defer``); run again
    with the same call id (once approved) it asks again until it has ``confirmations``
    approvals, then carries the staged transfer out."""
    folder = Path(directory)

    @ark.tool
    def transfer(amount: int, ctx: ark.ToolContext) -> str:
        """Transfer money (a person confirms it)."""
        staged = folder / f"staged-{ctx.call_id}"
        asked = int(staged.read_text()) if staged.exists() else 0
        with (folder / "transfers.log").open("a") as log:
            if asked >= confirmations:
                log.write(f"transferred {ctx.call_id}\n")
                return f"transferred {amount}"
            staged.write_text(str(asked + 1))
            log.write(f"{'staged' if asked == 0 else 'confirm'} {ctx.call_id}\n")
        return ctx.defer(f"confirm the transfer of {amount}" + (" once more" if asked else ""))

    return transfer


def _parent_turn(point: str) -> ScriptedTurn:
    second = (call("t1", "transfer", 1, amount=100) if point.startswith("plain")
              else call("d1", "delegate_task", 1, agent="cleaner", task="Clear the caches."))
    return ScriptedTurn(tool_calls=[call("p0", "count_files", 0, path="/parent"), second])


def parent_options(directory: Path, store, point: str, *, first_process: bool) -> dict:
    """The keyword arguments of the parent ``boss`` (for ``AgentRuntime`` or ``restore``)."""
    count_files = effect_tools(directory)[1]
    if point.startswith("plain"):
        return {"tools": [count_files, transfer_tool(directory, 2 if point == "plain_second" else 1)]}
    turns = CLEANER_FIRST[point] if first_process else CLEANER_REST[point]
    return {"tools": [count_files], "subagents": [cleaner(directory, store, list(turns))]}


def parent_runtime(directory: Path, store, point: str, *, first_process: bool) -> ark.AgentRuntime:
    """The parent of the killed process: its first turn is the batch with the deferring call."""
    return ark.AgentRuntime(ark.ScriptedModel([_parent_turn(point)]), storage=store, session_id="boss",
                            **parent_options(directory, store, point, first_process=first_process))
