"""A real AG-UI server (uvicorn on 127.0.0.1) per test, serving the test's runtime factory."""

from __future__ import annotations

import httpx
import pytest

import arknb as ark


@pytest.fixture
async def client():
    async with httpx.AsyncClient(timeout=30) as c:
        yield c


@pytest.fixture
async def serve():
    """``await serve(factory) -> AguiServer``; every server started is stopped after the test."""
    servers = []

    async def start(factory, **options):
        server = await ark.agui.serve(factory, **options)
        servers.append(server)
        return server

    yield start
    for server in servers:
        await server.aclose()
