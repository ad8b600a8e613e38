"""Random SIGKILLs during an approved batch of slow tools (see random_kills.py): a few
trials per store in the suite; ``python benchmarks/random_kills.py`` runs hundreds."""

from __future__ import annotations

import pytest

from .random_kills import run_trial


@pytest.mark.parametrize("seed", range(6))
async def test_an_approved_call_that_never_began_runs_after_restore_and_only_one_that_began_is_in_doubt(
        tmp_path, seed):
    trial = await run_trial(tmp_path, "sqlite", seed)
    assert trial.problems == [], trial


async def test_random_kills_on_postgres(tmp_path, pg_dsn):
    (tmp_path / "dsn").write_text(pg_dsn)
    trial = await run_trial(tmp_path, "postgres", 7)
    assert trial.problems == [], trial
