"""Every store arknb ships passes arknb.testing.StoreConformance (DESIGN §13)."""

from __future__ import annotations

import sqlite3

import pytest

import arknb as ark
from arknb.durable import MemoryStore
from arknb.durable._database import LAYOUT_VERSION
from arknb.durable.postgres_store import PG_LAYOUT_VERSION
from arknb.testing import StoreConformance


def _factory(make):
    stores = []

    def new():
        stores.append(make())
        return stores[-1]

    return new, stores


async def _close_all(stores):
    for store in stores:
        close = getattr(store, "aclose", None)
        if close is not None and not getattr(store, "closed", False):
            await close()


class TestMemoryStateStorage(StoreConformance):
    @pytest.fixture
    async def make_store(self):
        shared = ark.MemoryStateStorage()
        yield lambda: shared


class TestFileStateStorage(StoreConformance):
    def newer_layout(self, make_store):
        path = self.folder / "conf.json"
        path.write_text(path.read_text().replace('"schema_version":3', '"schema_version":99', 1))

    @pytest.fixture
    async def make_store(self, tmp_path):
        self.folder = tmp_path / "states"
        yield lambda: ark.FileStateStorage(self.folder)


class TestMemoryStore(StoreConformance):
    @pytest.fixture
    async def make_store(self):
        shared = MemoryStore()
        yield lambda: shared


class TestSQLiteStore(StoreConformance):
    @pytest.fixture
    async def make_store(self, tmp_path):
        self.db = tmp_path / "arknb.sqlite3"
        new, stores = _factory(lambda: ark.SQLiteStore(self.db))
        yield new
        await _close_all(stores)

    def newer_layout(self, make_store):
        with sqlite3.connect(self.db) as conn:
            conn.execute("UPDATE store_meta SET value = ? WHERE key = 'layout_version'", (str(LAYOUT_VERSION + 1),))


class TestPostgresStore(StoreConformance):
    @pytest.fixture
    async def make_store(self, pg_dsn):
        self.dsn = pg_dsn
        new, stores = _factory(lambda: ark.PostgresStore(pg_dsn))
        yield new
        await _close_all(stores)

    def newer_layout(self, make_store):
        import psycopg

        with psycopg.connect(self.dsn, autocommit=True) as conn:
            conn.execute("UPDATE store_meta SET value = %s WHERE key = 'layout_version'", (str(PG_LAYOUT_VERSION + 1),))
