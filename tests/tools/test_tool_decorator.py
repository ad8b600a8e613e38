"""Tool wraps a function: decoration-time checks, direct calls, and Tool.invoke outcomes."""

import asyncio
import threading
from datetime import date

import pytest
from pydantic import BaseModel

from arknb.domain import ArkError, CancellationToken, ContentPart, ToolResult, ToolRisk
from arknb.tools import Tool, ToolContext, tool


def make_ctx(**overrides) -> ToolContext:
    values = dict(session_id="s1", run_id="r1", state={"turn": 1}, batch_id="b1",
                  call_id="c1", cancel=CancellationToken())
    values.update(overrides)
    return ToolContext(**values)


class Point(BaseModel):
    x: float
    y: float = 0.0


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
async def async_add(a: int, b: int) -> int:
    """Add two integers, asynchronously."""
    await asyncio.sleep(0)
    return a + b


# --- decoration -------------------------------------------------------------------

def test_bare_decorator_returns_tool_with_safe_risk_and_definition():
    assert isinstance(add, Tool)
    assert add.name == "add"
    assert add.risk is ToolRisk.SAFE
    assert add.definition.parameters is add.parameters
    assert add.definition.risk == "safe"


def test_risk_option_marks_tool_dangerous():
    @tool(risk="dangerous")
    def clear_cache(path: str) -> str:
        """Delete a cache folder."""
        return path

    assert clear_cache.risk is ToolRisk.DANGEROUS
    assert clear_cache.definition.risk is ToolRisk.DANGEROUS


def test_unannotated_parameter_is_refused_naming_it():
    with pytest.raises(ArkError) as info:
        @tool
        def f(a: int, b) -> int:
            """Doc."""
            return a

    assert (info.value.layer, info.value.code) == ("config", "invalid_argument")
    assert "'b'" in info.value.message


def test_var_positional_is_refused():
    with pytest.raises(ArkError) as info:
        @tool
        def f(*numbers: int) -> int:
            """Doc."""
            return 0

    assert info.value.code == "invalid_argument"
    assert "*numbers" in info.value.message


def test_var_keyword_is_refused():
    with pytest.raises(ArkError) as info:
        @tool
        def f(a: int, **options: str) -> int:
            """Doc."""
            return a

    assert info.value.code == "invalid_argument"
    assert "**options" in info.value.message


def test_bad_risk_value_is_refused_naming_the_value():
    with pytest.raises(ArkError) as info:
        tool(risk="extreme")

    assert (info.value.layer, info.value.code) == ("config", "invalid_argument")
    assert "'extreme'" in info.value.message


def test_invalid_tool_name_is_refused():
    with pytest.raises(ArkError) as info:
        tool(lambda a: a)

    assert info.value.code == "invalid_argument"
    assert "<lambda>" in info.value.message


def test_annotation_pydantic_cannot_schema_is_refused_naming_the_tool():
    class Opaque:
        pass

    with pytest.raises(ArkError) as info:
        @tool
        def f(thing: Opaque) -> None:
            """Doc."""

    assert info.value.code == "invalid_argument"
    assert "'f'" in info.value.message


def test_unresolvable_string_annotation_is_refused():
    with pytest.raises(ArkError) as info:
        @tool
        def f(thing: "NoSuchType") -> None:  # noqa: F821
            """Doc."""

    assert info.value.code == "invalid_argument"
    assert "NoSuchType" in info.value.message


# --- direct calls -------------------------------------------------------------------

def test_tool_is_still_callable_like_the_function():
    assert add(1, 2) == 3
    assert add.fn(b=2, a=5) == 7
    assert add.__name__ == "add" and add.__doc__ == "Add two integers."


async def test_async_tool_called_directly_returns_a_coroutine():
    coro = async_add(1, 2)
    assert asyncio.iscoroutine(coro)
    assert await coro == 3


# --- invoke: execution ---------------------------------------------------------------

async def test_invoke_sync_tool_returns_json_text():
    result = await add.invoke({"a": 1, "b": 2}, make_ctx())
    assert (result.text, result.is_error, result.error_code) == ("3", False, None)


async def test_invoke_async_tool_is_awaited():
    result = await async_add.invoke({"a": 2, "b": 2}, make_ctx())
    assert result.text == "4"


async def test_invoke_coerces_and_passes_pydantic_model_instances():
    seen = []

    @tool
    def f(p: Point, when: date) -> str:
        """Doc."""
        seen.append((p, when))
        return "ok"

    result = await f.invoke({"p": {"x": "1.5"}, "when": "2024-05-01"}, make_ctx())
    assert result.text == "ok"
    assert seen == [(Point(x=1.5, y=0.0), date(2024, 5, 1))]


async def test_invoke_fills_defaults():
    @tool
    def f(a: int, b: int = 10) -> int:
        """Doc."""
        return a + b

    assert (await f.invoke({"a": 1}, make_ctx())).text == "11"


async def test_invoke_injects_context_into_the_context_parameter():
    ctx = make_ctx()
    received = []

    @tool
    async def f(q: str, info: ToolContext) -> str:
        """Doc."""
        received.append(info)
        return f"{q}@{info.session_id}/{info.call_id}"

    result = await f.invoke({"q": "hi"}, ctx)
    assert result.text == "hi@s1/c1"
    assert received[0] is ctx


async def test_invoke_refuses_context_parameter_sent_as_an_argument():
    @tool
    def f(q: str, ctx: ToolContext) -> str:
        """Doc."""
        return q

    result = await f.invoke({"q": "x", "ctx": "forged"}, make_ctx())
    assert result.error_code == "tool_arguments_invalid"
    assert "ctx" in result.text


async def test_invoke_passes_renamed_and_positional_only_parameters_by_their_real_names():
    @tool
    def f(json: str, /, model_config: int = 1) -> str:
        """Doc."""
        return f"{json}:{model_config}"

    assert (await f.invoke({"json": "j", "model_config": 2}, make_ctx())).text == "j:2"


async def test_sync_tool_runs_off_the_event_loop():
    release = threading.Event()

    @tool
    def blocking() -> str:
        """Blocks until the loop releases it."""
        return "released" if release.wait(timeout=5) else "loop was blocked"

    async def release_from_loop() -> None:
        await asyncio.sleep(0)
        release.set()

    result, _ = await asyncio.gather(blocking.invoke({}, make_ctx()), release_from_loop())
    assert result.text == "released"


# --- invoke: return conversion ---------------------------------------------------------

async def test_tool_result_return_passes_through_unchanged():
    prepared = ToolResult.from_parts([ContentPart.image_url("https://example.org/a.png")])

    @tool
    def f() -> ToolResult:
        """Doc."""
        return prepared

    assert await f.invoke({}, make_ctx()) is prepared


async def test_str_return_becomes_text_unquoted():
    @tool
    def f() -> str:
        """Doc."""
        return "plain ünïcode"

    assert (await f.invoke({}, make_ctx())).text == "plain ünïcode"


async def test_other_returns_become_json_keeping_non_ascii():
    @tool
    def f() -> dict:
        """Doc."""
        return {"city": "Zürich", "point": Point(x=1), "days": (1, 2), "none": None}

    result = await f.invoke({}, make_ctx())
    assert result.text == '{"city": "Zürich", "point": {"x": 1.0, "y": 0.0}, "days": [1, 2], "none": null}'


async def test_bool_return_becomes_json_true_not_python_true():
    @tool
    def f() -> bool:
        """Doc."""
        return True

    assert (await f.invoke({}, make_ctx())).text == "true"


async def test_none_return_becomes_json_null():
    @tool
    def f() -> None:
        """Doc."""

    assert (await f.invoke({}, make_ctx())).text == "null"


async def test_unserialisable_return_falls_back_to_str():
    class Thing:
        def __str__(self) -> str:
            return "a thing"

    @tool
    def f() -> object:
        """Doc."""
        return [Thing()]

    assert (await f.invoke({}, make_ctx())).text == '["a thing"]'


# --- invoke: failures become results -----------------------------------------------------

async def test_schema_failure_is_error_result_naming_each_field():
    result = await add.invoke({"a": "one", "c": 3}, make_ctx())
    assert result.is_error
    assert result.error_code == "tool_arguments_invalid"
    assert "a: Input should be a valid integer" in result.text
    assert "b: Field required" in result.text
    assert "c: Extra inputs are not permitted" in result.text


async def test_nested_field_failure_names_the_path():
    @tool
    def f(points: list[Point]) -> None:
        """Doc."""

    result = await f.invoke({"points": [{"x": 1}, {"x": "far"}]}, make_ctx())
    assert result.error_code == "tool_arguments_invalid"
    assert "points.1.x" in result.text


async def test_invalid_json_text_is_arguments_invalid():
    result = await add.invoke_json('{"a": 1,', make_ctx())
    assert result.error_code == "tool_arguments_invalid"
    assert "not valid JSON" in result.text


async def test_non_object_json_is_arguments_invalid():
    result = await add.invoke_json("[1, 2]", make_ctx())
    assert result.error_code == "tool_arguments_invalid"
    assert "must be a JSON object, got an array" in result.text


async def test_blank_json_means_no_arguments():
    @tool
    def f(n: int = 7) -> int:
        """Doc."""
        return n

    assert (await f.invoke_json("  ", make_ctx())).text == "7"


async def test_exception_in_tool_is_tool_failed_result_without_traceback():
    @tool
    def f(path: str) -> str:
        """Doc."""
        raise FileNotFoundError(f"no such file: {path}")

    result = await f.invoke({"path": "/tmp/x"}, make_ctx())
    assert result.is_error
    assert result.error_code == "tool_failed"
    assert result.text == "FileNotFoundError: no such file: /tmp/x"
    assert "Traceback" not in result.text


async def test_exception_in_async_tool_is_tool_failed_result():
    @tool
    async def f() -> str:
        """Doc."""
        raise ValueError("bad")

    result = await f.invoke({}, make_ctx())
    assert (result.error_code, result.text) == ("tool_failed", "ValueError: bad")


async def test_ark_error_in_tool_keeps_its_code():
    @tool
    def f() -> str:
        """Doc."""
        raise ArkError("security", "tool_denied", "not in this sandbox")

    result = await f.invoke({}, make_ctx())
    assert result.is_error
    assert result.error_code == "tool_denied"
    assert "not in this sandbox" in result.text


# --- invoke: cancellation --------------------------------------------------------------

async def test_invoke_with_cancelled_token_raises_cancelled_and_never_runs_tool():
    ran = []

    @tool
    def f() -> str:
        """Doc."""
        ran.append(True)
        return "ran"

    ctx = make_ctx()
    ctx.cancel.cancel("stop")
    with pytest.raises(asyncio.CancelledError):
        await f.invoke({}, ctx)
    assert ran == []


async def test_tool_failing_because_token_fired_propagates_cancelled_not_a_result():
    @tool
    async def f(ctx: ToolContext) -> str:
        """Doc."""
        ctx.cancel.cancel("user pressed Stop")
        ctx.cancel.raise_if_cancelled()
        return "unreachable"

    with pytest.raises(asyncio.CancelledError):
        await f.invoke({}, make_ctx())


async def test_cancelled_error_inside_tool_is_not_swallowed():
    @tool
    async def f() -> str:
        """Doc."""
        raise asyncio.CancelledError()

    with pytest.raises(asyncio.CancelledError):
        await f.invoke({}, make_ctx())


def test_tool_context_is_frozen():
    ctx = make_ctx()
    with pytest.raises(AttributeError):
        ctx.session_id = "other"  # type: ignore[misc]


def test_read_only_flag_reaches_the_definition():
    @tool(read_only=True)
    def peek(path: str) -> str:
        """Look at a file."""
        return path

    @tool
    def touch(path: str) -> str:
        """Change a file."""
        return path

    assert peek.read_only and peek.definition.read_only and "read_only=True" in repr(peek)
    assert not touch.read_only and not touch.definition.read_only


def test_read_only_must_be_a_bool():
    import pytest
    from arknb import ArkError

    with pytest.raises(ArkError, match="read_only must be True or False"):
        tool(read_only="yes")
