"""Start llama.cpp's ``llama-server`` on loopback: shared by ``tests/real`` and ``benchmarks/real_server.py``.

``cached_paths()`` asks ``build_llama_server.sh --cached`` for the cached binary and model (it
never builds); ``start_llama_server`` starts one on a free port of 127.0.0.1 and waits for a
healthy ``/health``; a watchdog process stops it by its PID when the caller ends in any way.
Failures are ``LlamaUnavailable`` with the reason (the test fixture skips or fails on it).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

__all__ = ["BUILD_SCRIPT", "LlamaServer", "LlamaUnavailable", "PARALLEL", "cached_paths", "start_llama_server"]

HERE = Path(__file__).resolve().parent
BUILD_SCRIPT = HERE / "build_llama_server.sh"
# Two slots: the concurrency test runs two runtimes at once, each in a slot of its own
# (with ``-np 1`` the server would queue the second request behind the first).
PARALLEL = 2
STARTUP_SECONDS = 180.0


class LlamaUnavailable(Exception):
    """The server is not cached or did not start (the message says why)."""


def cached_paths() -> tuple[Path, Path]:
    """``(llama-server, model.gguf)`` from the cache; ``LlamaUnavailable`` naming the build script."""
    done = subprocess.run(["bash", str(BUILD_SCRIPT), "--cached"], capture_output=True, text=True,
                          env={**os.environ, "PYTHON": sys.executable}, timeout=60)
    if done.returncode != 0:
        raise LlamaUnavailable(done.stderr.strip() or f"{BUILD_SCRIPT} --cached exited {done.returncode}")
    binary, model = done.stdout.strip().splitlines()[-2:]
    return Path(binary), Path(model)


@dataclass(frozen=True)
class LlamaServer:
    """A running ``llama-server``: where it answers, its process and its log."""

    root_url: str
    pid: int
    log: Path
    binary: Path
    model: Path

    @property
    def base_url(self) -> str:
        return self.root_url + "/v1"

    @property
    def templates(self) -> Path:
        """The chat templates copied from the llama.cpp tree at build time."""
        return self.binary.parent.parent / "templates"

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# Waits for its stdin to close (the test session's end, or its death: the pipe's other end
# belongs to that process only), then stops the server by its PID, SIGKILL after 10 s.
_WATCHDOG = """
import os, signal, sys, time
pid = int(sys.argv[1])
sys.stdin.read()
try:
    os.kill(pid, signal.SIGTERM)
    for _ in range(100):
        os.kill(pid, 0)
        time.sleep(0.1)
    os.kill(pid, signal.SIGKILL)
except ProcessLookupError:
    pass
"""


def _wait_healthy(process: subprocess.Popen, root_url: str, log: Path) -> str | None:
    """``None`` once ``/health`` says ok, else why the server is not up (with its log's tail)."""
    deadline = time.monotonic() + STARTUP_SECONDS
    with httpx.Client(timeout=5.0) as client:
        while time.monotonic() < deadline:
            code = process.poll()
            if code is not None:
                hint = (" (SIGILL: a build with native CPU detection on; see the SIGILL trap in"
                        " RECIPES.md)" if code in (132, -4) else "")
                return f"llama-server exited with code {code}{hint}: {log.read_text(errors='replace')[-1500:]}"
            try:
                response = client.get(root_url + "/health")
                if response.status_code == 200 and response.json().get("status") == "ok":
                    return None
            except httpx.TransportError:
                pass
            time.sleep(0.25)  # the server offers nothing to await while it loads the model
    return f"llama-server gave no healthy /health within {STARTUP_SECONDS:.0f} s: {log.read_text(errors='replace')[-1500:]}"


def start_llama_server(binary: Path, model: Path, folder: Path, *extra: str):
    """Start a server; return ``(LlamaServer, stop)``, or raise ``LlamaUnavailable`` saying why not."""
    port, log = _free_port(), folder / f"llama-server-{time.monotonic_ns()}.log"
    command = [str(binary), "-m", str(model), "--host", "127.0.0.1", "--port", str(port), "--jinja",
               "-c", "4096", "-t", "2", "-np", str(PARALLEL), "--metrics", *extra]
    with open(log, "wb") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                   cwd=folder, start_new_session=True)
    watchdog = subprocess.Popen([sys.executable, "-c", _WATCHDOG, str(process.pid)], stdin=subprocess.PIPE,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)

    def stop() -> None:
        watchdog.stdin.close()  # the watchdog stops the server by its PID
        watchdog.wait(timeout=30)
        process.wait(timeout=30)

    root_url = f"http://127.0.0.1:{port}"
    failure = _wait_healthy(process, root_url, log)
    if failure is not None:
        stop()
        raise LlamaUnavailable(failure)
    return LlamaServer(root_url=root_url, pid=process.pid, log=log, binary=binary, model=model), stop
