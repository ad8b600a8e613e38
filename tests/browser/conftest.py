"""Real JupyterLab in headless Chromium, driven by Playwright (sync API).

One JupyterLab server per test session (loopback, free port, random token, isolated
config/settings/workspace/runtime folders, no network lookups), one Chromium per
session, and a fresh browser context plus a fresh workspace URL per test. The
facts these fixtures rely on are in ``../shared/RECIPES.md``.

Fixtures:
    lab_server: the running server (``base_url``, ``token``, ``root_dir``).
    lab: a :class:`LabPage` for one test: open a notebook, run cells through
        JupyterLab's command registry, read outputs, evaluate code in the kernel,
        save screenshots under ``test-results/<test name>/``.

Without ``/usr/bin/chromium`` the browser tests are skipped locally and fail when
``CI`` is set: in CI they must run.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS_DIR = REPO_ROOT / "notebooks"
FIXTURES_DIR = Path(__file__).resolve().parent / "fixtures"
RESULTS_DIR = REPO_ROOT / "test-results"
CHROMIUM = Path(os.environ.get("ARKNB_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
SERVER_START_TIMEOUT = 90.0
POLL_INTERVAL = 0.1
DEFAULT_TIMEOUT_MS = 30_000

# User settings that keep JupyterLab off the network and quiet during tests.
LAB_USER_SETTINGS: dict[str, dict[str, Any]] = {
    "@jupyterlab/apputils-extension/notification": {
        "fetchNews": "false",
        "checkForUpdates": False,
        "doNotDisturbMode": True,
    },
    "@jupyterlab/extensionmanager-extension/plugin": {"enabled": False, "disclaimed": False},
    # Tests must not write back into the copied notebooks behind our back.
    "@jupyterlab/docmanager-extension/plugin": {"autosave": False},
}


def _in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def _require_browser() -> None:
    """Skip locally, fail in CI, when the system Chromium or Playwright is missing."""
    problem = None
    if not CHROMIUM.exists():
        problem = f"{CHROMIUM} not found (apt-get install -y chromium)"
    else:
        try:
            import playwright.sync_api  # noqa: F401
        except ImportError as exc:  # pragma: no cover - depends on the environment
            problem = f"playwright is not installed: {exc}"
    if problem is None:
        return
    if _in_ci():
        pytest.fail(f"browser tests must run in CI: {problem}", pytrace=False)
    pytest.skip(problem)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_until(
    condition: Callable[[], Any], *, timeout: float, interval: float = POLL_INTERVAL, what: str
) -> Any:
    """Poll ``condition`` until it returns something truthy or ``timeout`` passes."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(interval)


def safe_name(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_")[:120] or "test"


def ws_frame_msg_type(payload: str | bytes) -> str | None:
    """The ``msg_type`` of a kernel websocket frame.

    JupyterLab 4 speaks either the JSON protocol (one JSON object per frame) or the
    ``v1.kernel.websocket.jupyter.org`` binary one: a little-endian uint64 count ``n``,
    ``n`` uint64 offsets, then channel, header, parent_header, metadata, content and
    buffers at those offsets. Only the message's own header counts (a parent header
    may name ``comm_msg`` too).
    """
    try:
        if isinstance(payload, str):
            message = json.loads(payload)
            return (message.get("header") or {}).get("msg_type") or message.get("msg_type")
        data = bytes(payload)
        count = int.from_bytes(data[:8], "little")
        offsets = [int.from_bytes(data[8 + 8 * i : 16 + 8 * i], "little") for i in range(count)]
        if count < 3:
            return None
        return json.loads(data[offsets[1] : offsets[2]]).get("msg_type")
    except (ValueError, AttributeError, TypeError):
        return None


# --------------------------------------------------------------------------- server


@dataclass
class LabServer:
    """A JupyterLab server started for this test session."""

    base_url: str
    token: str
    root_dir: Path
    process: subprocess.Popen[bytes]
    log_path: Path

    def api(self, method: str, path: str) -> Any:
        request = urllib.request.Request(
            f"{self.base_url}{path}",
            method=method,
            headers={"Authorization": f"token {self.token}"},
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            body = response.read()
        return json.loads(body) if body else None

    def shutdown_all_sessions(self) -> None:
        """Shut down every kernel a test left behind (keeps 2 cores for the next test)."""
        for session in self.api("GET", "/api/sessions"):
            try:
                self.api("DELETE", f"/api/sessions/{session['id']}")
            except urllib.error.HTTPError:
                pass

    def write_notebook(self, name: str, cells: list[str]) -> str:
        """Write a notebook of code cells under the server root; return its path
        relative to the root (what :meth:`LabPage.open` takes)."""
        import nbformat

        nb = nbformat.v4.new_notebook()
        nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
        nb.cells = [nbformat.v4.new_code_cell(source.strip("\n")) for source in cells]
        relative = f"_generated/{name}"
        target = self.root_dir / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, target)
        return relative

    def log_tail(self, lines: int = 60) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no server log)"


def _write_isolated_config(home: Path) -> dict[str, str]:
    dirs = {
        "JUPYTER_CONFIG_DIR": home / "config",
        "JUPYTER_DATA_DIR": home / "data",
        "JUPYTER_RUNTIME_DIR": home / "runtime",
        "JUPYTERLAB_SETTINGS_DIR": home / "lab-settings",
        "JUPYTERLAB_WORKSPACES_DIR": home / "lab-workspaces",
        "IPYTHONDIR": home / "ipython",
    }
    for path in dirs.values():
        path.mkdir(parents=True, exist_ok=True)
    for plugin, values in LAB_USER_SETTINGS.items():
        target = dirs["JUPYTERLAB_SETTINGS_DIR"] / f"{plugin}.jupyterlab-settings"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(values))
    server_config = {
        "ServerApp": {"allow_root": True, "open_browser": False, "terminals_enabled": False},
        "LabApp": {
            "expose_app_in_browser": True,
            "news_url": None,
            "check_for_updates_class": "jupyterlab.NeverCheckForUpdate",
            "extension_manager": "readonly",
        },
        "JupyterNotebookApp": {"expose_app_in_browser": True},
    }
    (dirs["JUPYTER_CONFIG_DIR"] / "jupyter_server_config.json").write_text(
        json.dumps(server_config)
    )
    return {name: str(path) for name, path in dirs.items()}


def _prepare_root(root: Path) -> None:
    """The server's root: a copy of ``notebooks/`` plus the test fixtures in ``_fixtures/``."""
    if NOTEBOOKS_DIR.is_dir():
        shutil.copytree(
            NOTEBOOKS_DIR,
            root,
            ignore=shutil.ignore_patterns(".ipynb_checkpoints", ".arknb", "__pycache__"),
        )
    else:
        root.mkdir(parents=True)
    shutil.copytree(FIXTURES_DIR, root / "_fixtures")


def _server_answers(base_url: str, token: str, process: subprocess.Popen[bytes]) -> bool:
    if process.poll() is not None:
        raise RuntimeError(f"jupyter server exited with code {process.returncode}")
    port = int(base_url.rsplit(":", 1)[1])
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            pass
        request = urllib.request.Request(
            f"{base_url}/api/status", headers={"Authorization": f"token {token}"}
        )
        with urllib.request.urlopen(request, timeout=2) as response:
            return response.status == 200 and "started" in json.loads(response.read())
    except (OSError, ValueError):
        return False


def _start_server(home: Path, root: Path, *, app: str = "jupyterlab") -> LabServer:
    """Start ``jupyter lab`` (``app="jupyterlab"``) or Jupyter Notebook 7 (``app="notebook"``)."""
    env = dict(os.environ)
    env.update(_write_isolated_config(home))
    # The kernel inherits this: notebooks import the working tree's arknb.
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(REPO_ROOT), env.get("PYTHONPATH", "")) if p
    )
    env.pop("JUPYTER_TOKEN", None)
    token = uuid.uuid4().hex
    last_error: Exception | None = None
    for attempt in range(3):  # a free port can be taken between probe and bind
        port = _free_port()
        log_path = home / f"jupyter-lab-{attempt}.log"
        log = log_path.open("wb")
        process = subprocess.Popen(
            [
                sys.executable, "-m", app,
                "--no-browser",
                "--ip=127.0.0.1",
                f"--port={port}",
                "--ServerApp.port_retries=0",
                f"--IdentityProvider.token={token}",
                f"--ServerApp.root_dir={root}",
                "--ServerApp.allow_root=True",
                "--LabApp.expose_app_in_browser=True" if app == "jupyterlab"
                else "--JupyterNotebookApp.expose_app_in_browser=True",
            ],
            cwd=root,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        log.close()
        server = LabServer(f"http://127.0.0.1:{port}", token, root, process, log_path)
        try:
            wait_until(
                lambda: _server_answers(server.base_url, token, process),
                timeout=SERVER_START_TIMEOUT,
                what="JupyterLab /api/status",
            )
            return server
        except (RuntimeError, TimeoutError) as exc:
            last_error = exc
            _stop_server(server)
            if "Address already in use" not in server.log_tail():
                break
    raise RuntimeError(f"JupyterLab did not start: {last_error}\n{server.log_tail()}")


def _stop_server(server: LabServer) -> None:
    if server.process.poll() is None:
        server.process.terminate()  # the server shuts its kernels down on SIGTERM
        try:
            server.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(server.process.pid, 9)  # our own process group only
            server.process.wait(timeout=5)


@pytest.fixture(scope="package")
def lab_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabServer]:
    _require_browser()
    home = tmp_path_factory.mktemp("jupyter-home")
    _prepare_root(home / "root")
    server = _start_server(home, home / "root")
    try:
        yield server
    finally:
        _stop_server(server)


# --------------------------------------------------------------------------- browser


@pytest.fixture(scope="package")
def chromium_browser() -> Iterator[Any]:
    _require_browser()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS
        )
        try:
            yield browser
        finally:
            browser.close()


# JavaScript run in the page. `window.jupyterapp` exists because of expose_app_in_browser.
_JS_PANEL = "const app = window.jupyterapp; const panel = app.shell.currentWidget;"

_JS_KERNEL_IDLE = (
    "() => { const p = window.jupyterapp && window.jupyterapp.shell.currentWidget;"
    " const s = p && p.sessionContext;"
    " return !!(s && s.isReady && s.session && s.session.kernel"
    " && s.session.kernel.status === 'idle' && p.content && p.content.widgets.length); }"
)

_JS_RUN_CELL = (
    "async (index) => {" + _JS_PANEL + """
      panel.content.activeCellIndex = index;
      panel.content.deselectAll();
      const cell = panel.content.widgets[index];
      if (!cell) throw new Error(`no cell ${index}`);
      await app.commands.execute('notebook:run-cell');
      if (cell.model.type !== 'code') return null;
      const error = cell.model.outputs.toJSON().find((o) => o.output_type === 'error');
      return error ? `${error.ename}: ${error.evalue}` : null;
    }"""
)

_JS_KERNEL_EXEC = (
    "async (code) => {" + _JS_PANEL + """
      const kernel = panel.sessionContext.session.kernel;
      const future = kernel.requestExecute({ code, store_history: false });
      let out = '';
      future.onIOPub = (msg) => {
        const t = msg.header.msg_type;
        if (t === 'stream') out += msg.content.text;
        else if (t === 'execute_result') out += msg.content.data['text/plain'] + '\\n';
        else if (t === 'error') out += `${msg.content.ename}: ${msg.content.evalue}\\n`;
      };
      const reply = await future.done;
      return { status: reply.content.status, out };
    }"""
)

_JS_CELL_OUTPUT = (
    "(index) => {" + _JS_PANEL + """
      const cell = panel.content.widgets[index];
      if (!cell) throw new Error(`no cell ${index}`);
      const outputs = cell.node.querySelectorAll('.jp-OutputArea-output');
      return Array.from(outputs, (node) => node.innerText).join('\\n');
    }"""
)


@dataclass
class LabPage:
    """One test's view of JupyterLab: a Playwright page plus notebook helpers."""

    page: Any
    server: LabServer
    output_dir: Path
    comm_frames: list[str] = field(default_factory=list)
    console: list[str] = field(default_factory=list)

    def open(self, notebook: str, *, timeout: float = 60.0) -> None:
        """Open ``notebook`` (relative to the server root) in a fresh workspace and
        wait until the kernel is idle."""
        workspace = f"t{uuid.uuid4().hex[:12]}"
        url = f"{self.server.base_url}/lab/workspaces/{workspace}/tree/{notebook}?token={self.server.token}"
        self.page.goto(url)
        self.page.wait_for_selector(".jp-Notebook", timeout=timeout * 1000)
        self.page.wait_for_function(_JS_KERNEL_IDLE, timeout=timeout * 1000, polling=100)
        self.page.wait_for_selector(
            ".jp-Notebook-ExecutionIndicator[data-status='idle']", timeout=timeout * 1000
        )

    def wait_idle(self, *, timeout: float = 60.0) -> None:
        self.page.wait_for_function(_JS_KERNEL_IDLE, timeout=timeout * 1000, polling=50)

    def run_cell(self, index: int, *, timeout: float = 60.0, allow_error: bool = False) -> str:
        """Run cell ``index`` through the command registry, wait for its execute reply
        and an idle kernel, and return the cell's output text. A cell that raised
        fails the test at once (unless ``allow_error``)."""
        error = self.page.evaluate(_JS_RUN_CELL, index)
        if error and not allow_error:
            raise AssertionError(f"cell {index} raised {error}")
        self.wait_idle(timeout=timeout)
        return self.cell_output(index)

    def run_cells(self, indices: range | list[int], *, timeout: float = 60.0) -> None:
        for index in indices:
            self.run_cell(index, timeout=timeout)

    def cell_index(self, containing: str) -> int:
        """Index of the first cell whose source contains ``containing``."""
        index = self.page.evaluate(
            "(text) => {" + _JS_PANEL + " return panel.content.widgets.findIndex("
            "(c) => c.model.sharedModel.getSource().includes(text)); }",
            containing,
        )
        if index < 0:
            raise AssertionError(f"no cell contains {containing!r}")
        return index

    def run_cell_containing(self, text: str, *, timeout: float = 60.0) -> str:
        return self.run_cell(self.cell_index(text), timeout=timeout)

    def cell_count(self) -> int:
        return self.page.evaluate("() => {" + _JS_PANEL + " return panel.content.widgets.length; }")

    def cell_output(self, index: int) -> str:
        return self.page.evaluate(_JS_CELL_OUTPUT, index)

    def cell_locator(self, index: int) -> Any:
        return self.page.locator(".jp-Notebook .jp-Cell").nth(index)

    def kernel_exec(self, code: str, *, timeout: float = 30.0) -> str:
        """Run ``code`` in the notebook's kernel without adding a cell; return its
        stdout (and repr of a final expression). Raises if the code raised."""
        result = self.page.evaluate(_JS_KERNEL_EXEC, code)
        if result["status"] != "ok":
            raise AssertionError(f"kernel code failed:\n{code}\n{result['out']}")
        return result["out"]

    def screenshot(self, name: str, *, locator: Any = None, full_page: bool = False) -> Path:
        """Save a PNG under ``test-results/<test name>/``."""
        self.output_dir.mkdir(parents=True, exist_ok=True)
        path = self.output_dir / f"{safe_name(name)}.png"
        if locator is not None:
            locator.screenshot(path=str(path))
        else:
            self.page.screenshot(path=str(path), full_page=full_page)
        return path

    def comm_msg_count(self) -> int:
        return len(self.comm_frames)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()
    setattr(item, f"rep_{report.when}", report)


@pytest.fixture
def lab(
    request: pytest.FixtureRequest, lab_server: LabServer, chromium_browser: Any
) -> Iterator[LabPage]:
    context = chromium_browser.new_context(viewport={"width": 1400, "height": 1000})
    context.set_default_timeout(DEFAULT_TIMEOUT_MS)
    page = context.new_page()
    helper = LabPage(page, lab_server, RESULTS_DIR / safe_name(request.node.name))
    page.on("console", lambda msg: helper.console.append(f"{msg.type}: {msg.text}"))

    def on_websocket(ws: Any) -> None:
        def on_frame(payload: str | bytes) -> None:
            if ws_frame_msg_type(payload) == "comm_msg":
                helper.comm_frames.append(payload)

        ws.on("framereceived", on_frame)

    page.on("websocket", on_websocket)
    try:
        yield helper
    finally:
        failed = getattr(request.node, "rep_call", None)
        if failed is not None and failed.failed:
            try:
                helper.screenshot("failure", full_page=True)
                (helper.output_dir / "console.log").write_text("\n".join(helper.console))
            except Exception:  # noqa: BLE001 - best effort diagnostics
                pass
        context.close()
        lab_server.shutdown_all_sessions()
