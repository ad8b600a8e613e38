"""An MCP server written with the SDK, run by the tests over stdio or Streamable HTTP.

Every side effect is appended to the file named by ARKNB_MCP_LOG (one line per effect), so
the tests count effects the way tests/durable counts them.
Usage: python kit_server.py [stdio | http PORT]
"""

import base64
import os
import sys

import anyio
from mcp.server import MCPServer
from mcp.server.mcpserver import Context, Image
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ToolAnnotations
from pydantic import BaseModel

LOG = os.environ.get("ARKNB_MCP_LOG", os.devnull)
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==")

server = MCPServer("kit")


def log(line: str) -> None:
    with open(LOG, "a", encoding="utf-8") as handle:
        handle.write(line + "\n")
        handle.flush()
        if LOG != os.devnull:
            os.fsync(handle.fileno())


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def echo(text: str) -> str:
    """Echo the text back."""
    return text


@server.tool(annotations=ToolAnnotations(destructiveHint=True))
def delete_item(name: str) -> str:
    """Delete an item (destructive)."""
    log(f"delete {name}")
    return f"deleted {name}"


@server.tool(annotations=ToolAnnotations(destructiveHint=False, idempotentHint=True))
def put_item(name: str) -> str:
    """Store an item (idempotent)."""
    log(f"put {name}")
    return f"stored {name}"


@server.tool()
def unannotated(name: str) -> str:
    """A tool without annotations (the spec's defaults: destructive)."""
    log(f"unannotated {name}")
    return name


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def picture() -> list:
    """Return a tiny PNG and a caption."""
    return [Image(data=PNG, format="png"), "a red pixel"]


class Weather(BaseModel):
    city: str
    celsius: float


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def weather(city: str) -> Weather:
    """Structured weather."""
    return Weather(city=city, celsius=21.5)


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def fail(why: str) -> str:
    """Always fails."""
    raise ToolError(f"it failed: {why}")


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
async def slow(seconds: float, ctx: Context) -> str:
    """Count up for a while, reporting progress."""
    steps = max(1, int(seconds * 10))
    try:
        for step in range(steps):
            await ctx.report_progress(step + 1, steps, f"step {step + 1}")
            await anyio.sleep(0.1)
    except anyio.get_cancelled_exc_class():
        log("cancelled slow")
        raise
    return "slept"


@server.tool(annotations=ToolAnnotations(readOnlyHint=True), structured_output=False)
def big(chars: int) -> str:
    """Return a long text."""
    return "x" * chars


@server.tool(annotations=ToolAnnotations(destructiveHint=False))
def crash() -> str:
    """The server process dies mid-call."""
    log("crash")
    sys.stderr.write("kit: crashing on purpose\n")
    sys.stderr.flush()
    os._exit(3)


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
async def hang() -> str:
    """Never answers."""
    await anyio.sleep(3600)
    return "never"


@server.tool(annotations=ToolAnnotations(destructiveHint=False))
async def grow(ctx: Context) -> str:
    """Add a tool named extra and announce the change."""
    server.add_tool(lambda: "extra!", name="extra", description="Added later.",
                    annotations=ToolAnnotations(readOnlyHint=True))
    await ctx.request_context.session.send_tool_list_changed()
    return "grown"


@server.tool(description="Shows <script>alert('pwned')</script><b>bold</b>",
             annotations=ToolAnnotations(readOnlyHint=True))
def html() -> str:
    return "<img src=x onerror=alert(1)><script>alert('result')</script>"


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def env_value(variable: str) -> str:
    """Read an environment variable of the server."""
    return os.environ.get(variable, "")


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def header_value(name: str, ctx: Context) -> str:
    """Read an HTTP header of the request (Streamable HTTP only)."""
    return dict(ctx.headers or {}).get(name.lower(), "")


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def meta_key(ctx: Context) -> str:
    """Report the idempotency key the client sent in _meta."""
    meta = ctx.request_context.meta or {}
    return str(dict(meta).get("arknb/idempotency_key"))


@server.tool(annotations=ToolAnnotations(destructiveHint=False))
async def slow_effect(name: str, seconds: float, ctx: Context) -> str:
    """Write a 'start' line, sleep, then the effect line (a kill mid-call leaves only the start)."""
    key = dict(ctx.request_context.meta or {}).get("arknb/idempotency_key")
    log(f"start {name} {key}")
    await anyio.sleep(seconds)
    log(f"effect {name}")
    return f"done {name}"


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
async def muse(topic: str, ctx: Context) -> str:
    """Ask the client's model for a line about a topic (sampling)."""
    from mcp_types import SamplingMessage, TextContent
    try:
        result = await ctx.request_context.session.create_message(
            [SamplingMessage(role="user", content=TextContent(type="text", text=f"One line about {topic}"))],
            max_tokens=50, system_prompt="Be brief.")
    except Exception as exc:  # declined: the client said no
        return f"declined: {exc}"
    return f"model said: {result.content.text}"


class Answer(BaseModel):
    color: str
    count: int = 1


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
async def ask(ctx: Context) -> str:
    """Ask the person a question (elicitation)."""
    result = await ctx.elicit("Which color?", schema=Answer)
    log(f"elicit {result.action}")  # what the server received (ElicitResult.action)
    if result.action == "accept":
        return f"accepted {result.data.color} x{result.data.count}"
    return result.action


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "http":
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run()
