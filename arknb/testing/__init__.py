"""Kits for people who extend arknb: ``StoreConformance`` checks a store of your own.

Import it only from tests (it needs pytest)."""

from .store_conformance import StoreConformance

__all__ = ["StoreConformance"]
