"""A type defined in a module, as a user's own code defines it (tests/runtime/test_typed_restore.py)."""

from pydantic import BaseModel


class Capital(BaseModel):
    country: str
    city: str
