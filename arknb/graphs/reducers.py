"""How a node's update is merged into a graph's state: field by field, with reducers.

A graph's state is a pydantic model. A node returns an *update* (a dict of field names,
or a model whose set fields are taken); each field of it replaces the field in the
state, unless the field declares a reducer in its annotation, LangGraph's way::

    class Research(BaseModel):
        question: str
        notes: Annotated[list[str], ark.append] = []     # appended to, never replaced

A reducer is any two-argument callable in the ``Annotated`` metadata:
``reducer(current, update) -> new value`` (``operator.add`` works too). The merged
state is validated by the model, so a value the field's type refuses is an error
naming the node and the field, and nothing is merged.
"""

from __future__ import annotations

import inspect
from typing import Any, Callable, Mapping

from pydantic import BaseModel, ValidationError
from pydantic_core import to_jsonable_python

from arknb.domain import ArkError, ErrorCode, ErrorLayer

__all__ = ["append", "merge_update", "reducers_of", "update_of", "update_to_json"]


def append(current: Any, update: Any) -> list[Any]:
    """The append reducer: ``current`` + ``update`` (a list extends, anything else is one item).

    Example:
        >>> append(["a"], ["b", "c"]), append(["a"], "b")
        (['a', 'b', 'c'], ['a', 'b'])
    """
    base = list(current or ())
    if isinstance(update, (list, tuple)):
        return base + list(update)
    return base + [update]


_REDUCERS: dict[type, dict[str, Callable[[Any, Any], Any]]] = {}


def reducers_of(model: type[BaseModel]) -> dict[str, Callable[[Any, Any], Any]]:
    """The fields of ``model`` that declare a reducer, with it (cached per class)."""
    found = _REDUCERS.get(model)
    if found is None:
        found = {}
        for name, info in model.model_fields.items():
            for meta in info.metadata:
                if callable(meta) and not isinstance(meta, type) and _takes_two(meta):
                    found[name] = meta
        _REDUCERS[model] = found
    return found


def _takes_two(fn: Any) -> bool:
    try:
        inspect.signature(fn).bind(None, None)
    except TypeError:
        return False
    except ValueError:  # a builtin without a signature (operator.add has one)
        return True
    return True


def update_of(value: Any, node: str) -> dict[str, Any]:
    """A node's return value as an update dict (None: no update).

    Raises:
        ArkError: ``graph_node_failed`` naming the node if it returned something else.
    """
    if value is None:
        return {}
    if isinstance(value, BaseModel):
        return {name: getattr(value, name) for name in value.model_fields_set}
    if isinstance(value, Mapping):
        if not all(isinstance(key, str) for key in value):
            raise _failed(node, "its update has a key that is not a field name (a str)")
        return dict(value)
    raise _failed(node, f"it returned {type(value).__name__}; a node returns a dict of fields to update, "
                        "a model of the state's type, or None")


def merge_update(state: BaseModel, update: Mapping[str, Any], node: str) -> BaseModel:
    """``state`` with ``update`` merged field by field (reducers applied), validated.

    Raises:
        ArkError: ``graph_node_failed`` naming the node and the field when the update
            names a field the state does not have or a value its type refuses.
    """
    if not update:
        return state
    model = type(state)
    fields = model.model_fields
    unknown = [key for key in update if key not in fields]
    if unknown:
        raise _failed(node, f"its update names {', '.join(map(repr, unknown))}, which {model.__name__} does not "
                            f"have (fields: {', '.join(fields)})")
    reducers = reducers_of(model)
    values = dict(state.__dict__)
    for key, value in update.items():
        reducer = reducers.get(key)
        if reducer is None:
            values[key] = value
            continue
        try:
            values[key] = reducer(values[key], value)
        except Exception as exc:
            raise _failed(node, f"its update of {key!r} cannot be merged by the field's reducer "
                                f"{getattr(reducer, '__name__', reducer)!r}: {type(exc).__name__}: {exc}") from None
    try:
        return model.model_validate(values)
    except ValidationError as exc:
        where = ", ".join(".".join(str(p) for p in err["loc"]) for err in exc.errors()[:3])
        raise _failed(node, f"its update does not fit {model.__name__} ({where}): "
                            f"{exc.errors()[0]['msg']}") from None


def update_to_json(update: Mapping[str, Any], node: str) -> dict[str, Any]:
    """The update as JSON-ready values (what a step's operation records)."""
    try:
        return to_jsonable_python(dict(update))
    except Exception as exc:  # pydantic_core's serialisation error names the value
        raise _failed(node, f"its update cannot be saved as JSON: {exc}") from None


def _failed(node: str, why: str) -> ArkError:
    return ArkError(ErrorLayer.RUNTIME, ErrorCode.GRAPH_NODE_FAILED, f"graph node {node!r}: {why}")
