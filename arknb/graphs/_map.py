"""A map step: one function over every item of a list, ``limit`` at a time, results in order.

The items are taken from the iterable one at a time by ``limit`` workers, so at most
``limit`` items are in flight whatever the list's length (a generator is never turned
into a list of tasks). On a durable store each item is an operation of its own
(``{step key}[i]``, its ``run_id`` the step's key), committed as it finishes: after a
crash with half the items done, only the other half runs; an item that began and may
not run twice is in doubt like any step.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from pydantic_core import to_jsonable_python

from arknb.domain import ArkError, ErrorCode, ErrorLayer
from arknb.durable import Operation, OperationStatus

from .nodes import MapNode, call_user
from .reducers import merge_update

if TYPE_CHECKING:
    from ._steps import NodeOutcome, StepRunner

__all__ = ["run_map"]

_MISSING = object()


async def run_map(runner: StepRunner, node: MapNode, step: int, key: str, op: Operation | None,
                  single: bool) -> NodeOutcome:
    from ._engine import new_step_op
    from ._steps import NodeOutcome, _failure
    e = runner.engine
    if op is None:
        op = runner.take_prepared(key)  # committed with the step before
        if op is None:
            op = new_step_op(e, key, {"node": node.name, "kind": "map", "step": step, "state_version": e.version})
            await runner.started(op, node, step)
        known: dict[int, Operation] = {}
    else:
        known = {int(item.purpose_key.rsplit("[", 1)[1].rstrip("]")): item for item in await e.log.items(key)}
    durable = e.log.durable
    results: list[Any] = []
    doubts: list[NodeOutcome] = []
    failure: list[BaseException] = []
    try:
        source = iter(node.over(e.state))
    except Exception as exc:
        return await runner.settle(op, None, _failure(node.name, exc), single, node.name)
    counter = iter(range(1 << 62))

    async def worker() -> None:
        while not failure:
            try:
                item = next(source)
            except StopIteration:
                return
            index = next(counter)
            results.append(_MISSING)
            item_key = f"{key}[{index}]"
            record = known.pop(index, None)
            if record is not None and record.completed:
                if record.status is OperationStatus.SUCCEEDED:
                    results[index] = record.effective_result
                    continue
                failure.append(record.error.to_error())
                return
            if record is not None and not runner.may_rerun(record, node.idempotent):
                doubts.append(runner.in_doubt(record, node.name, step, item_key,
                                              f"item {index} of map step {node.name!r} (step {step})"))
                continue
            if durable:
                record = runner.retry_op(record) if record is not None else \
                    new_step_op(e, item_key, {"node": node.name, "kind": "map_item", "index": index}, scope=key)
                await e.log.write([record])
            try:
                value = await call_user(node.fn, item, runner.ctx(node.name, step, item_key, index=index), node.arity)
                saved = to_jsonable_python(value) if durable else value
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                error = ArkError(ErrorLayer.RUNTIME, ErrorCode.GRAPH_NODE_FAILED,
                                 f"map node {node.name!r}, item {index}: {type(exc).__name__}: {exc}")
                failure.append(error)
                if durable:
                    await e.log.write([runner.finish(record, None, error.info())])
                return
            results[index] = value
            if durable:
                await e.log.write([runner.finish(record, saved, None)])

    workers = [asyncio.ensure_future(worker()) for _ in range(max(1, node.limit))]
    try:
        await asyncio.gather(*workers)
    except BaseException:
        for task in workers:
            task.cancel()
        raise
    if failure:
        return await runner.settle(op, None, _failure(node.name, failure[0]), single, node.name)
    if doubts:
        return NodeOutcome(waiting=[item for d in doubts for item in d.waiting],
                           ops=[o for d in doubts for o in d.ops], step_id=op.operation_id, node=node.name)
    update = {node.into: results}
    try:
        merge_update(e.state, update, node.name)
        update = runner.to_json(update, node.name)
    except ArkError as exc:
        return await runner.settle(op, None, exc.info(), single, node.name)
    return await runner.settle(op, update, None, single, node.name)
