"""The chat in marimo (issue 25 item 8): ``mo.ui.anywidget(ark.ChatWidget(runtime))`` in a
real marimo editor in headless Chromium streams an answer, its Approve button runs the
dangerous tool, and re-running the chat's cell five times leaves one bus listener (marimo
closes a re-run cell's comm without ``widget.close()``; the widget lets go when it does).

The marimo server is started here on 127.0.0.1 (a free port, no token) with the working
tree on PYTHONPATH. Without marimo installed the test is skipped locally and fails in CI.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import urllib.request

import pytest
from playwright.sync_api import expect

from .conftest import CHROMIUM_ARGS, REPO_ROOT, _free_port, _in_ci, _require_browser, wait_until

APP = textwrap.dedent('''
    import marimo

    app = marimo.App()


    @app.cell
    def _():
        import marimo as mo
        import arknb as ark

        CLEARED = []

        @ark.tool(risk="dangerous")
        def clear_cache(path: str) -> str:
            """Delete a cache folder."""
            CLEARED.append(path)
            return f"cleared {path}"

        model = ark.RuleModel([
            ark.Rule(r"clear (\\S+)", call="clear_cache", arguments={"path": "{m[1]}"}, answer="Done: {result}."),
        ], fallback="Streaming a long answer word by word, to watch it arrive. " * 4, chunk_delay=0.03)
        runtime = ark.AgentRuntime(model, tools=[clear_cache])
        return CLEARED, ark, mo, runtime


    @app.cell
    def _(ark, mo, runtime):
        chat = mo.ui.anywidget(ark.ChatWidget(runtime))
        chat
        return (chat,)


    @app.cell
    def _(CLEARED, chat, runtime):
        chat
        print(f"LISTENERS={sum(len(v) for v in runtime.bus._by_type.values())} CLEARED={len(CLEARED)}")
        print(f"CHAT={id(chat)}")
        return
''')


@pytest.fixture
def marimo_app(tmp_path):
    _require_browser()
    try:
        import marimo  # noqa: F401
    except ImportError as exc:
        if _in_ci():
            pytest.fail(f"the marimo test must run in CI: {exc}", pytrace=False)
        pytest.skip(f"marimo is not installed: {exc}")
    (tmp_path / "chat_app.py").write_text(APP)
    port = _free_port()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(REPO_ROOT), os.environ.get("PYTHONPATH"))
                                                      if p)}
    log = (tmp_path / "marimo.log").open("wb")
    process = subprocess.Popen(
        [sys.executable, "-m", "marimo", "edit", "chat_app.py", "--headless", "--no-token", "-p", str(port),
         "--skip-update-check"], cwd=tmp_path, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"

    def answers():
        if process.poll() is not None:
            raise RuntimeError(f"marimo exited: {(tmp_path / 'marimo.log').read_text()[-2000:]}")
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                return response.status == 200
        except OSError:
            return False

    try:
        wait_until(answers, timeout=90, what="the marimo editor")
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, 9)
        log.close()


def test_the_chat_streams_approves_and_a_re_run_cell_leaves_one_listener(marimo_app, chromium_browser):
    from .conftest import RESULTS_DIR

    out = RESULTS_DIR / "test_marimo"
    out.mkdir(parents=True, exist_ok=True)
    context = chromium_browser.new_context(viewport={"width": 1300, "height": 1000})
    page = context.new_page()
    try:
        page.goto(marimo_app)
        chat = page.locator("[data-testid='arknb-chat'][data-ready='true']").first
        for _ in range(12):  # run every cell (the editor does not on open); it answers once connected
            page.locator(".marimo-cell").first.wait_for()
            page.get_by_test_id("run-button").last.click()
            try:
                chat.wait_for(timeout=5_000)
                break
            except Exception:  # noqa: BLE001 - not connected yet: click again
                continue
        chat.wait_for(timeout=30_000)
        cells = page.locator(".marimo-cell")
        count_cell = cells.filter(has_text="LISTENERS=")

        box = chat.get_by_test_id("arknb-input")
        box.fill("tell me something")
        box.press("Enter")
        chat.locator("[data-testid='arknb-assistant'][data-streaming='true']").wait_for()  # it streams
        chat.locator("[data-testid='arknb-assistant-text']", has_text="watch it arrive").first.wait_for()
        expect(chat).to_have_attribute("data-status", "completed", timeout=30_000)

        box.fill("please clear /tmp/x")
        box.press("Enter")
        chat.get_by_test_id("arknb-approve").click()
        chat.locator("[data-testid='arknb-assistant-text']", has_text="Done: cleared /tmp/x.").wait_for()
        page.screenshot(path=str(out / "marimo_chat_approved.png"), full_page=True)

        chat_cell = cells.filter(has_text="mo.ui.anywidget")
        seen = set()
        for _ in range(5):
            before = count_cell.inner_text()
            chat_cell.hover()
            chat_cell.get_by_test_id("run-button").first.click()
            # The counting cell re-runs after the chat's (marimo is reactive) and names a new chat.
            wait_until(lambda: count_cell.inner_text() != before, timeout=30, what="the chat cell's re-run")
            seen.add(next(line for line in count_cell.inner_text().splitlines() if line.startswith("CHAT=")))
        assert len(seen) == 5  # five re-runs, five new chats
        page.locator("[data-testid='arknb-chat'][data-ready='true']").first.wait_for()
        printed = [line for line in count_cell.inner_text().splitlines() if line.startswith("LISTENERS=")]
        assert printed == ["LISTENERS=1 CLEARED=1"], printed
        page.screenshot(path=str(out / "marimo_after_five_re_runs.png"), full_page=True)
    finally:
        context.close()
