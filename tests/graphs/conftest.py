"""The graph tests reuse the durable tests' PostgreSQL (started on loopback per test session)."""

from tests.durable.conftest import pg_dsn, pg_server  # noqa: F401
