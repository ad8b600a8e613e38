"""ToolRegistry: registration, single-call execution, and concurrent batches."""

import asyncio
import threading
import time

import pytest

from arknb.domain import ArkError, CancellationToken, ToolCall, ToolRisk
from arknb.tools import Tool, ToolContext, ToolRegistry, tool


def make_ctx(call: ToolCall | None = None, token: CancellationToken | None = None) -> ToolContext:
    return ToolContext(session_id="s1", run_id="r1", state=None, batch_id="b1",
                       call_id=call.id if call else "c1", cancel=token or CancellationToken())


def call(name: str, arguments_json: str = "{}", index: int = 0, id: str | None = None) -> ToolCall:
    return ToolCall(id=id or f"{name}-{index}", name=name, arguments_json=arguments_json, index=index)


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool(risk="dangerous")
def wipe(path: str) -> str:
    """Delete a folder."""
    return f"wiped {path}"


# --- registration ----------------------------------------------------------------------

def test_register_wraps_a_plain_function_into_a_tool():
    registry = ToolRegistry()

    def shout(text: str) -> str:
        """Upper-case the text."""
        return text.upper()

    registered = registry.register(shout)
    assert isinstance(registered, Tool)
    assert registry.get("shout") is registered
    assert registered.description == "Upper-case the text."


def test_duplicate_name_is_refused_with_invalid_argument():
    registry = ToolRegistry([add])

    @tool(name="add")
    def other_add(a: int) -> int:
        """Doc."""
        return a

    with pytest.raises(ArkError) as info:
        registry.register(other_add)
    assert (info.value.layer, info.value.code) == ("config", "invalid_argument")
    assert "'add'" in info.value.message
    assert registry.get("add") is add


def test_duplicate_in_constructor_is_refused():
    with pytest.raises(ArkError):
        ToolRegistry([add, add])


def test_replace_true_replaces_and_refreshes_definitions():
    registry = ToolRegistry([add])
    before = registry.definitions()

    @tool(name="add", description="New adder.")
    def new_add(a: int) -> int:
        """Doc."""
        return a

    registry.register(new_add, replace=True)
    assert registry.get("add") is new_add
    assert registry.definitions()[0].description == "New adder."
    assert before[0].description == "Add two integers."


def test_definitions_are_cached_until_next_register():
    registry = ToolRegistry([add])
    first = registry.definitions()
    assert registry.definitions() is first
    registry.register(wipe)
    assert [d.name for d in registry.definitions()] == ["add", "wipe"]
    assert registry.definitions() is not first


def test_lookup_helpers_reflect_registered_tools():
    registry = ToolRegistry([add, wipe])
    assert len(registry) == 2
    assert registry.names() == ("add", "wipe")
    assert list(registry) == [add, wipe]
    assert "add" in registry and add in registry and "nope" not in registry
    assert registry.get("nope") is None
    assert registry.risk_of("wipe") is ToolRisk.DANGEROUS
    assert registry.risk_of("add") is ToolRisk.SAFE
    assert registry.risk_of("nope") is None


# --- execute ------------------------------------------------------------------------------

async def test_execute_runs_the_named_tool_with_parsed_arguments():
    registry = ToolRegistry([add])
    result = await registry.execute(call("add", '{"a": 1, "b": 2}'), make_ctx())
    assert (result.text, result.is_error) == ("3", False)


async def test_unknown_tool_is_not_found_result_listing_available_names():
    registry = ToolRegistry([add, wipe])
    result = await registry.execute(call("mul", '{"a": 1}'), make_ctx())
    assert result.is_error
    assert result.error_code == "tool_not_found"
    assert "'mul'" in result.text and "add, wipe" in result.text


async def test_bad_json_is_arguments_invalid_result():
    registry = ToolRegistry([add])
    result = await registry.execute(call("add", '{"a": 1, "b":'), make_ctx())
    assert (result.is_error, result.error_code) == (True, "tool_arguments_invalid")


async def test_non_object_json_is_arguments_invalid_result():
    registry = ToolRegistry([add])
    result = await registry.execute(call("add", '"1 + 2"'), make_ctx())
    assert result.error_code == "tool_arguments_invalid"
    assert "JSON object" in result.text


async def test_schema_failure_through_execute_names_the_field():
    registry = ToolRegistry([add])
    result = await registry.execute(call("add", '{"a": 1, "b": "two"}'), make_ctx())
    assert result.error_code == "tool_arguments_invalid"
    assert "b: Input should be a valid integer" in result.text


async def test_raising_tool_through_execute_is_tool_failed_result():
    @tool
    def boom() -> str:
        """Doc."""
        raise RuntimeError("kaput")

    result = await ToolRegistry([boom]).execute(call("boom"), make_ctx())
    assert (result.error_code, result.text) == ("tool_failed", "RuntimeError: kaput")


# --- execute_batch -------------------------------------------------------------------------

async def test_async_tools_in_one_batch_run_concurrently():
    intervals: dict[str, tuple[float, float]] = {}

    @tool
    async def nap(label: str) -> str:
        """Sleep a little."""
        start = time.perf_counter()
        await asyncio.sleep(0.2)
        intervals[label] = (start, time.perf_counter())
        return label

    registry = ToolRegistry([nap])
    calls = [call("nap", '{"label": "a"}', 0), call("nap", '{"label": "b"}', 1)]
    results = await registry.execute_batch(calls, make_ctx)

    assert [r.text for r in results] == ["a", "b"]
    (a_start, a_end), (b_start, b_end) = intervals["a"], intervals["b"]
    # Each started before the other ended: the intervals overlap.
    assert b_start < a_end and a_start < b_end


async def test_sync_tools_in_one_batch_run_concurrently_in_threads():
    # Each tool waits for the other at the barrier: run one after the other, the
    # first would time out and fail.
    barrier = threading.Barrier(2, timeout=5)

    @tool
    def meet(label: str) -> str:
        """Wait for the partner."""
        barrier.wait()
        return label

    registry = ToolRegistry([meet])
    calls = [call("meet", '{"label": "a"}', 0), call("meet", '{"label": "b"}', 1)]
    results = await registry.execute_batch(calls, make_ctx)
    assert [(r.text, r.is_error) for r in results] == [("a", False), ("b", False)]


async def test_batch_results_follow_call_index_not_completion_order():
    fast_done = asyncio.Event()

    @tool
    async def slow() -> str:
        """Finishes only after fast."""
        await fast_done.wait()
        return "slow"

    @tool
    async def fast() -> str:
        """Finishes at once."""
        fast_done.set()
        return "fast"

    completed: list[str] = []
    registry = ToolRegistry([slow, fast])
    calls = [call("slow", index=0), call("fast", index=1)]
    results = await registry.execute_batch(
        calls, make_ctx, on_result=lambda c, r: completed.append(r.text))

    assert completed == ["fast", "slow"]
    assert [r.text for r in results] == ["slow", "fast"]


async def test_batch_orders_by_index_even_when_calls_are_given_out_of_order():
    registry = ToolRegistry([add])
    calls = [call("add", '{"a": 2, "b": 0}', index=2), call("add", '{"a": 0, "b": 0}', index=0),
             call("add", '{"a": 1, "b": 0}', index=1)]
    results = await registry.execute_batch(calls, make_ctx)
    assert [r.text for r in results] == ["0", "1", "2"]


async def test_batch_mixes_errors_and_successes_without_raising():
    registry = ToolRegistry([add])
    calls = [call("add", '{"a": 1, "b": 1}', 0), call("nope", index=1), call("add", "{", 2)]
    results = await registry.execute_batch(calls, make_ctx)
    assert [r.error_code for r in results] == [None, "tool_not_found", "tool_arguments_invalid"]


async def test_batch_passes_each_call_its_own_context():
    @tool
    def who(ctx: ToolContext) -> str:
        """Doc."""
        return ctx.call_id

    registry = ToolRegistry([who])
    results = await registry.execute_batch(
        [call("who", id="x", index=0), call("who", id="y", index=1)], make_ctx)
    assert [r.text for r in results] == ["x", "y"]


async def test_failing_on_result_observer_does_not_lose_results():
    def observer(c: ToolCall, r) -> None:
        raise RuntimeError("observer bug")

    registry = ToolRegistry([add])
    results = await registry.execute_batch([call("add", '{"a": 1, "b": 2}')], make_ctx,
                                           on_result=observer)
    assert [r.text for r in results] == ["3"]


async def test_empty_batch_returns_empty_list():
    assert await ToolRegistry([add]).execute_batch([], make_ctx) == []


async def test_cancelling_the_batch_task_cancels_and_awaits_every_child():
    started = {"a": asyncio.Event(), "b": asyncio.Event()}
    saw_cancel: dict[str, bool] = {}
    finished: dict[str, bool] = {}

    @tool
    async def hang(label: str) -> str:
        """Wait forever."""
        started[label].set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            saw_cancel[label] = True
            raise
        finally:
            finished[label] = True
        return label

    registry = ToolRegistry([hang])
    calls = [call("hang", '{"label": "a"}', 0), call("hang", '{"label": "b"}', 1)]
    batch = asyncio.create_task(registry.execute_batch(calls, make_ctx))
    await started["a"].wait()
    await started["b"].wait()

    batch.cancel()
    with pytest.raises(asyncio.CancelledError):
        await batch

    # Both children were cancelled and had finished by the time the batch returned.
    assert saw_cancel == {"a": True, "b": True}
    assert finished == {"a": True, "b": True}


async def test_firing_the_cancel_token_cancels_running_children_and_raises_cancelled():
    token = CancellationToken()
    started = asyncio.Event()
    saw_cancel: list[bool] = []

    @tool
    async def hang() -> str:
        """Wait forever."""
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            saw_cancel.append(True)
            raise
        return "never"

    registry = ToolRegistry([hang])
    batch = asyncio.create_task(
        registry.execute_batch([call("hang")], lambda c: make_ctx(c, token)))
    await started.wait()

    token.cancel("user pressed Stop")
    with pytest.raises(asyncio.CancelledError):
        await batch
    assert saw_cancel == [True]
