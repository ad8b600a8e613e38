"""What a paused run asked its answer to be, saved so a restore asks for the same (DESIGN §17).

A run started with ``output_type=T`` that pauses (an approval, a suspend, a crash) is
continued later, maybe in a new process where the runtime has no ``output_type`` or
another one. The state keeps the type's schema name, its JSON Schema and where it was
defined, so the restored runtime can find ``T`` again (or refuse with a clear error)
rather than silently answering with another type.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

__all__ = ["SavedOutputType"]


class SavedOutputType(BaseModel):
    """The output type of the session's current run.

    Attributes:
        name: the schema name (``"City"``).
        schema_text: the JSON Schema the model was asked to follow, as canonical JSON text.
        type_path: ``"module:qualname"`` where the type was defined ("" if unknown).
        mode: how it was asked for: ``"native"``, ``"tool"`` or ``"text"``.
    """

    model_config = ConfigDict(frozen=True)

    name: str
    schema_text: str
    type_path: str = ""
    mode: str = "native"
