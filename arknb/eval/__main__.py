"""``python -m arknb.eval``: the command line (see :mod:`arknb.eval.cli`)."""

from .cli import main

__all__: list[str] = []

if __name__ == "__main__":
    raise SystemExit(main())
