"""A Jupyter-free harness for the widgets' front end (RECIPES: "serve the widget's ESM
to a blank page via page.route and drive render({model, el}) with a fake model").

Chromium is Debian's (/usr/bin/chromium); Playwright's own browser download is never
used. Without it these tests skip locally and FAIL when CI is set.
"""

from __future__ import annotations

import base64
import os
from pathlib import Path

import pytest

STATIC = Path(__file__).resolve().parents[2] / "arknb" / "static"
CHROMIUM = Path(os.environ.get("ARKNB_CHROMIUM", "/usr/bin/chromium"))
ORIGIN = "http://arknb.test"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run", "--disable-quic"]

FAKE_MODEL = """
window.fakeModel = (state) => {
  const handlers = {};
  const model = {
    sent: [],
    get: (k) => state[k],
    set: (k, v) => { state[k] = v; for (const f of handlers["change:" + k] || []) f(); },
    on: (name, f) => { (handlers[name] ||= []).push(f); },
    off: (name, f) => { handlers[name] = (handlers[name] || []).filter((g) => g !== f); },
    send: (msg) => { model.sent.push(msg); },
    emit: (msg, buffers) => { for (const f of handlers["msg:custom"] || []) f(msg, buffers); },
  };
  return model;
};
window.mount = async (name, state) => {
  const mod = (await import(`/${name}.js`)).default;
  const model = window.fakeModel(state);
  const el = document.createElement("div");
  document.body.append(el);
  if (mod.initialize) await mod.initialize({ model });
  const cleanup = await mod.render({ model, el });
  return { model, el, cleanup };
};
"""

PAGE = f"""<!doctype html><html><head><meta charset="utf-8">
<link rel="stylesheet" href="/chat.css"><link rel="stylesheet" href="/timeline.css">
<script>{FAKE_MODEL}</script></head><body></body></html>"""


@pytest.fixture(scope="module")
def browser():
    # Module scope, not session: sync Playwright keeps an event loop running in this
    # thread while it is open, which would break the asyncio tests collected after us.
    if not CHROMIUM.exists():
        if os.environ.get("CI"):
            pytest.fail(f"{CHROMIUM} is missing: the front-end harness must run in CI")
        pytest.skip(f"{CHROMIUM} not installed")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS, headless=True)
        yield b
        b.close()


class Harness:
    def __init__(self, page) -> None:
        self.page = page
        self.foreign_requests: list[str] = []
        self.dialogs: list[str] = []
        self.errors: list[str] = []

    def mount(self, name: str, state: dict) -> None:
        self.page.evaluate("async ([n, s]) => { window.w = await window.mount(n, s); }", [name, state])
        self.page.wait_for_selector(f"[data-testid='arknb-{name}'][data-ready='true']")

    def sent(self) -> list[dict]:
        return self.page.evaluate("() => window.w.model.sent")

    def emit(self, msg: dict, buffers: list[bytes] | None = None) -> None:
        """Deliver a kernel message (binary buffers arrive as DataViews, as in Jupyter)."""
        if not buffers:
            self.page.evaluate("(m) => window.w.model.emit(m)", msg)
            return
        encoded = [base64.b64encode(b).decode("ascii") for b in buffers]
        self.page.evaluate(
            """([m, bufs]) => window.w.model.emit(m, bufs.map((b) => {
                 const bin = atob(b); const out = new Uint8Array(bin.length);
                 for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
                 return new DataView(out.buffer); }))""", [msg, encoded])

    def set(self, key: str, value) -> None:
        self.page.evaluate("([k, v]) => window.w.model.set(k, v)", [key, value])

    def frames(self) -> None:
        """Return after two animation frames and a task: whatever a message or an event
        scheduled for the next frame (the views fold deltas in once per frame) has run.
        For checking that something did *not* happen, where there is nothing to wait for."""
        self.page.evaluate(
            "() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(() => setTimeout(r, 0))))")


@pytest.fixture
def harness(browser):
    context = browser.new_context(accept_downloads=True)
    page = context.new_page()
    h = Harness(page)

    def route(r):
        url = r.request.url
        if not url.startswith(ORIGIN + "/"):
            h.foreign_requests.append(url)
            return r.abort()
        name = url[len(ORIGIN) + 1:].split("?")[0]
        if name in ("", "index.html"):
            return r.fulfill(status=200, content_type="text/html", body=PAGE)
        path = STATIC / name
        if path.is_file():
            kind = "text/css" if name.endswith(".css") else "text/javascript"
            return r.fulfill(status=200, content_type=kind, body=path.read_bytes())
        return r.fulfill(status=404, body="")

    context.route("**/*", route)
    page.on("dialog", lambda d: (h.dialogs.append(d.message), d.dismiss()))
    page.on("pageerror", lambda e: h.errors.append(str(e)))
    page.goto(ORIGIN + "/index.html")
    yield h
    context.close()
    assert h.errors == [], h.errors
