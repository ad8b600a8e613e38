"""A real AG-UI client against arknb's server (DESIGN §18): the official ``@ag-ui/client``
(npm, 1.0.0), bundled here with esbuild into a page served from 127.0.0.1 (no CDN), in
Chromium. The answer streams into the page, the approval interrupt is answered by a
click there, and the run completes; the client's own protocol checks see every event."""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import subprocess
import threading
from pathlib import Path

import pytest
from playwright.sync_api import expect

import arknb as ark

from .conftest import RESULTS_DIR, _in_ci

CLIENT_DIR = Path(__file__).with_name("agui_client")


def _bundle(out: Path) -> None:
    """``npm ci`` (once) and esbuild the page's script with @ag-ui/client inside."""
    esbuild = CLIENT_DIR / "node_modules" / ".bin" / "esbuild"
    if not esbuild.exists():
        npm = shutil.which("npm")
        if npm is None:
            if _in_ci():
                pytest.fail("npm is needed to install @ag-ui/client for this test")
            pytest.skip("npm is not installed")
        subprocess.run([npm, "ci", "--no-audit", "--no-fund"], cwd=CLIENT_DIR, check=True, timeout=600)
    subprocess.run([str(esbuild), "page.js", "--bundle", "--format=iife", "--platform=browser",
                    f"--outfile={out}", "--log-level=warning"], cwd=CLIENT_DIR, check=True, timeout=120)


class Site:
    """The page, its bundle and the agent (mounted at /agent/) on one loopback server,
    served by uvicorn on a loop in a thread (the test drives the browser synchronously)."""

    def __init__(self, factory, folder: Path | None) -> None:
        import uvicorn
        from starlette.applications import Starlette
        from starlette.responses import FileResponse
        from starlette.routing import Mount, Route

        if folder is None:  # the app alone, with the page it ships at GET /
            asgi = self.agent = ark.agui.app(factory)
        else:
            self.agent = ark.agui.app(factory, page=False)
            page, bundle = CLIENT_DIR / "page.html", folder / "bundle.js"
            asgi = Starlette(routes=[
                Route("/", lambda request: FileResponse(page)),
                Route("/bundle.js", lambda request: FileResponse(bundle, media_type="text/javascript")),
                Mount("/agent", app=self.agent),
            ])
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}/"
        self.server = uvicorn.Server(uvicorn.Config(asgi, lifespan="off", log_level="warning"))
        self.server.capture_signals = lambda: _nothing()  # leave pytest's signal handlers alone
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_until_complete,
                                       args=(self.server.serve(sockets=[self.sock]),), daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=30)
        self.sock.close()
        self.loop.close()


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def _agent(ran: list):
    @ark.tool(risk="dangerous")
    def clear_cache(path: str) -> str:
        """Delete a cache folder."""
        ran.append(path)
        return f"cleared {path}"

    model = ark.ScriptedModel([
        ark.ScriptedTurn(text=["I will ", "clear ", "the cache ", "now."], chunk_delay=0.05, tool_calls=[
            ark.ToolCall(id="c1", name="clear_cache", arguments_json='{"path": "/tmp/cache"}')]),
        ark.ScriptedTurn(text=["Done: ", "the cache ", "is cleared."], chunk_delay=0.05),
    ])
    return lambda thread: ark.AgentRuntime(model, tools=[clear_cache], session_id=thread)


def test_the_page_the_server_ships_chats_and_answers_an_approval(chromium_browser):
    ran: list = []
    site = Site(_agent(ran), None)
    out = RESULTS_DIR / "agui_shipped_page"
    out.mkdir(parents=True, exist_ok=True)
    context = chromium_browser.new_context(viewport={"width": 900, "height": 650})
    page = context.new_page()
    requests = []
    page.on("request", lambda request: requests.append(request.url))
    try:
        page.goto(site.url + "?thread=shipped")
        expect(page.locator("#status")).to_have_text("done")  # the opening (empty) run
        page.fill("#input", "Please clear the cache")
        page.click("#send button")
        card = page.locator(".interrupt")
        expect(card).to_contain_text("clear_cache")
        expect(card).to_contain_text("/tmp/cache")
        expect(page.locator(".assistant").first).to_have_text("I will clear the cache now.")
        page.screenshot(path=str(out / "interrupt.png"), full_page=True)
        assert ran == []
        card.locator("button[data-action='approve']").click()
        expect(page.locator("#status")).to_have_text("done")
        expect(page.locator(".assistant").last).to_have_text("Done: the cache is cleared.")
        page.screenshot(path=str(out / "completed.png"), full_page=True)
        assert ran == ["/tmp/cache"]
        page.reload()  # the thread lives on the server: its history comes back
        expect(page.locator(".assistant").last).to_have_text("Done: the cache is cleared.")
        assert all(url.startswith(site.url) for url in requests), requests
    finally:
        context.close()
        site.close()


@pytest.fixture
def site(tmp_path):
    _bundle(tmp_path / "bundle.js")
    ran = []

    @ark.tool(risk="dangerous")
    def clear_cache(path: str) -> str:
        """Delete a cache folder."""
        ran.append(path)
        return f"cleared {path}"

    model = ark.ScriptedModel([
        ark.ScriptedTurn(text=["I will ", "clear ", "the cache ", "now."], chunk_delay=0.05, tool_calls=[
            ark.ToolCall(id="c1", name="clear_cache", arguments_json='{"path": "/tmp/cache"}')]),
        ark.ScriptedTurn(text=["Done: ", "the cache ", "is cleared."], chunk_delay=0.05),
    ])
    served = Site(lambda thread: ark.AgentRuntime(model, tools=[clear_cache], session_id=thread), tmp_path)
    served.ran = ran
    try:
        yield served
    finally:
        served.close()


def test_the_official_client_streams_answers_an_interrupt_and_completes(site, chromium_browser):
    out = RESULTS_DIR / "agui_client"
    out.mkdir(parents=True, exist_ok=True)
    context = chromium_browser.new_context(viewport={"width": 1000, "height": 700})
    page = context.new_page()
    requests = []
    page.on("request", lambda request: requests.append(request.url))
    try:
        page.goto(site.url)
        expect(page.locator("#ready")).to_have_text("yes")
        page.click("#send")
        answer = page.locator("p.assistant").first
        expect(answer).to_have_text("I will clear the cache now.")
        card = page.locator(".interrupt")
        expect(card).to_contain_text("clear_cache")
        expect(card).to_contain_text("/tmp/cache")
        expect(page.locator("#status")).to_have_text("interrupt")
        assert site.ran == []
        page.screenshot(path=str(out / "interrupt.png"), full_page=True)

        card.locator("button.approve").click()
        expect(page.locator("#status")).to_have_text("success")
        expect(page.locator("p.assistant").nth(1)).to_have_text("Done: the cache is cleared.")
        expect(page.locator(".tool-result")).to_contain_text("cleared /tmp/cache")
        page.screenshot(path=str(out / "completed.png"), full_page=True)
        assert page.locator("#error").inner_text() == ""
        assert site.ran == ["/tmp/cache"]

        types = page.evaluate("() => window.aguiEvents.map((e) => e.type)")
        assert types.count("RUN_STARTED") == 2 and types.count("RUN_FINISHED") == 2
        # streamed: the chunks come 50 ms apart, so the page got the answers in pieces
        assert types.count("TEXT_MESSAGE_CONTENT") >= 4
        assert int(page.locator("#chunks").inner_text()) == types.count("TEXT_MESSAGE_CONTENT")
        # nothing came from anywhere but the loopback server (no CDN)
        assert requests and all(url.startswith(site.url) for url in requests), requests
    finally:
        context.close()
    assert os.path.getsize(out / "completed.png") > 0
