"""Fixtures for the OpenAI-compatible provider tests: one loopback SSE server per session."""

from __future__ import annotations

import pytest

from openai_sse_server import SSEServer


@pytest.fixture(scope="session")
def _sse_server_session():
    server = SSEServer().start()
    yield server
    server.stop()


@pytest.fixture
def server(_sse_server_session: SSEServer) -> SSEServer:
    """The loopback server, with an empty script and request log."""
    _sse_server_session.reset()
    yield _sse_server_session
    _sse_server_session.reset()


class SleepRecorder:
    """An injectable ``sleep`` that records the delays and returns at once."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


@pytest.fixture
def sleeps() -> SleepRecorder:
    return SleepRecorder()


@pytest.fixture
async def make_client(server: SSEServer, sleeps: SleepRecorder):
    """Build clients pointed at the loopback server; all are closed after the test."""
    from arknb.providers.openai_compat import OpenAICompatibleClient, RetryPolicy, local

    made = []

    def make(profile=None, *, api_key="sk-test-key", model="test-model", retry=None, **kwargs):
        profile = profile or local(server.base_url, think_tags=False)
        retry = retry or RetryPolicy(sleep=sleeps, random=lambda: 0.0)
        client = OpenAICompatibleClient(profile, api_key=api_key, model=model, retry=retry, **kwargs)
        made.append(client)
        return client

    yield make
    for client in made:
        await client.aclose()
