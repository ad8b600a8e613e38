"""Servers for the MCP tests: the SDK kit server (tests write nothing by hand on the wire)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

import arknb as ark
from tests.durable.conftest import pg_dsn, pg_server  # noqa: F401  (a real PostgreSQL for the durable MCP test)

KIT = str(Path(__file__).with_name("kit_server.py"))


@pytest.fixture
def effects(tmp_path: Path) -> Path:
    """The file the kit server appends one line per side effect to."""
    path = tmp_path / "effects.log"
    path.touch()
    return path


@pytest.fixture
def kit(effects: Path):
    """A factory of kit servers over stdio; each is closed at the test's end."""
    made: list[ark.MCPServer] = []

    def make(**options) -> ark.MCPServer:
        env = {"ARKNB_MCP_LOG": str(effects), **options.pop("env", {})}
        server = ark.MCPServer.stdio(sys.executable, [KIT], env=env, name=options.pop("name", "kit"), **options)
        made.append(server)
        return server

    yield make
    for server in made:  # a test that forgot aclose(): end its process, never leak one
        pid = server.process_id
        if pid is not None:
            try:
                os.killpg(pid, 15)
            except OSError:
                pass


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def http_kit(effects: Path):
    """The kit server over Streamable HTTP on 127.0.0.1 (started and stopped here); yields its URL."""
    port = free_port()
    env = {**os.environ, "ARKNB_MCP_LOG": str(effects)}
    process = subprocess.Popen([sys.executable, KIT, "http", str(port)], env=env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE)
    deadline = time.monotonic() + 30
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                break
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                err = process.stderr.read().decode(errors="replace") if process.stderr else ""
                message = f"the HTTP kit server did not start: {err[-800:]}"
                if os.environ.get("CI") == "true":
                    pytest.fail(message)
                pytest.skip(message)
            # A socket poll, not a sleep on a guess: the server is up when it accepts.
            time.sleep(0.05)
    yield f"http://127.0.0.1:{port}/mcp"
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
