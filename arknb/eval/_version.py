"""The arknb version that file headers record."""

from __future__ import annotations

__all__ = ["arknb_version"]


def arknb_version() -> str:
    """``arknb.__version__`` (read from the package root, which this module may import: it is the core)."""
    import arknb

    return arknb.__version__
