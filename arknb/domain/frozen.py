"""Deeply frozen JSON containers: the read-only dicts and lists of domain values.

Hook contexts, tool contexts and event payloads are snapshots that share structure
with the runtime's own values (DESIGN §5): a hook receives the runtime's current
``AgentState``, not a copy. So the values themselves must be immutable all the way
down, or a hook writing ``ctx.state.metadata["x"] = 1`` would change live state with
no ``hook.decision``. :class:`FrozenDict` and :class:`FrozenList` are ``dict`` and
``list`` subclasses whose writes raise ``TypeError``. Being subclasses, they pass
``isinstance(x, dict)``, compare equal to plain dicts and lists, serialise with
``json`` and pydantic, and pickle; nothing that reads them needs to change.

A value is frozen once, where it is built (a model field validated, an event payload
published), never per context: :func:`freeze` converts nested dicts and lists and
reuses what is already frozen, so a frozen value costs nothing to hand on.

Each frozen container remembers where it comes from (its *origin*: a sentence naming
the field and the way to change it), so a refused write says what is read-only and
what to do instead.

Example:
    >>> args = freeze({"path": "/tmp", "flags": ["-r"]}, "ToolCall.arguments is read-only")
    >>> args["flags"] == ["-r"], isinstance(args, dict)
    (True, True)
    >>> args["flags"].append("-f")
    Traceback (most recent call last):
    ...
    TypeError: cannot append to this list: ToolCall.arguments is read-only
    >>> mutable = args.thaw(); mutable["flags"].append("-f")
"""

from __future__ import annotations

from typing import Any, Callable, ClassVar, Iterable, Mapping

from pydantic import AfterValidator, BaseModel, ConfigDict

from .json_decode import MAX_JSON_DEPTH, JSONTooDeepError

__all__ = ["DeepFrozenModel", "FrozenDict", "FrozenList", "FrozenJSON", "freeze", "freeze_mapping", "shallow_copy",
           "thaw"]

_GENERIC = "this value is read-only (a frozen snapshot); x.thaw() or dict(x) / list(x) gives a mutable copy"
_SCALARS = frozenset({str, int, float, bool, type(None)})


def _refuse(container: Any, action: str) -> TypeError:
    return TypeError(f"cannot {action}: {container._origin}")


class FrozenDict(dict):
    """A ``dict`` whose contents cannot change; nested dicts and lists are frozen too.

    Reading is a plain ``dict``'s (same speed, same ``repr``, equal to an equal dict).
    Every write (``d[k] = v``, ``del``, ``update``, ``pop``, ``setdefault``, ``|=``, ...)
    raises ``TypeError`` naming what is read-only. ``d | {...}``, ``d.copy()`` and
    ``dict(d)`` give plain mutable (shallow) copies; :meth:`thaw` a deep one.
    """

    __slots__ = ("_origin",)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if _is_set(self):
            raise _refuse(self, "re-initialise this dict")
        dict.__init__(self, *args, **kwargs)
        _set_dict_origin(self, _GENERIC)
        for key, value in dict.items(self):
            if type(value) not in _SCALARS:
                dict.__setitem__(self, key, _freeze(value, _GENERIC, 2))

    def __setitem__(self, key: Any, value: Any) -> None:
        raise _refuse(self, f"set key {key!r}")

    def __delitem__(self, key: Any) -> None:
        raise _refuse(self, f"delete key {key!r}")

    def __ior__(self, other: Any) -> FrozenDict:
        raise _refuse(self, "update this dict")

    def _write(self, *args: Any, **kwargs: Any) -> Any:
        raise _refuse(self, "change this dict")

    clear = pop = popitem = setdefault = update = _write

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(frozenset(dict.items(self)))

    @classmethod
    def fromkeys(cls, keys: Iterable[Any], value: Any = None) -> FrozenDict:  # type: ignore[override]
        """A frozen dict of ``keys``, each mapped to ``value`` (frozen too)."""
        return _freeze_dict(dict.fromkeys(keys, value), _GENERIC, 1)

    def __copy__(self) -> FrozenDict:
        return self

    def __deepcopy__(self, memo: dict) -> FrozenDict:
        import copy

        return _new_dict({k: copy.deepcopy(v, memo) for k, v in dict.items(self)}, self._origin)

    def __reduce__(self) -> tuple:
        return (_restore_dict, (dict(self), self._origin))

    def thaw(self) -> dict[str, Any]:
        """A deep mutable copy: plain dicts and lists all the way down."""
        return thaw(self)


class FrozenList(list):
    """A ``list`` whose contents cannot change; nested dicts and lists are frozen too.

    Equal to an equal list (not to a tuple, as for any list). Every write (item or
    slice assignment, ``append``, ``extend``, ``+=``, ``sort``, ...) raises
    ``TypeError`` naming what is read-only; ``list(x)``, slices and ``x + [...]`` give
    plain mutable copies, :meth:`thaw` a deep one.
    """

    __slots__ = ("_origin",)

    def __init__(self, iterable: Iterable[Any] = ()) -> None:
        if _is_set(self):
            raise _refuse(self, "re-initialise this list")
        list.__init__(self, (v if type(v) in _SCALARS else _freeze(v, _GENERIC, 2) for v in iterable))
        _set_list_origin(self, _GENERIC)

    def __setitem__(self, index: Any, value: Any) -> None:
        raise _refuse(self, "set an item of this list")

    def __delitem__(self, index: Any) -> None:
        raise _refuse(self, "delete an item of this list")

    def __iadd__(self, other: Any) -> FrozenList:
        raise _refuse(self, "extend this list")

    def __imul__(self, other: Any) -> FrozenList:
        raise _refuse(self, "repeat this list in place")

    def append(self, value: Any) -> None:
        raise _refuse(self, "append to this list")

    def _write(self, *args: Any, **kwargs: Any) -> Any:
        raise _refuse(self, "change this list")

    clear = extend = insert = pop = remove = reverse = sort = _write

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(tuple(self))

    def __copy__(self) -> FrozenList:
        return self

    def __deepcopy__(self, memo: dict) -> FrozenList:
        import copy

        return _new_list([copy.deepcopy(v, memo) for v in self], self._origin)

    def __reduce__(self) -> tuple:
        return (_restore_list, (list(self), self._origin))

    def thaw(self) -> list[Any]:
        """A deep mutable copy: plain lists and dicts all the way down."""
        return thaw(self)


_set_dict_origin = FrozenDict._origin.__set__  # type: ignore[attr-defined]
_set_list_origin = FrozenList._origin.__set__  # type: ignore[attr-defined]


def _is_set(container: Any) -> bool:
    try:
        container._origin
    except AttributeError:
        return False
    return True


def _new_dict(items: Mapping[Any, Any], origin: str) -> FrozenDict:
    out = dict.__new__(FrozenDict)
    dict.update(out, items)
    _set_dict_origin(out, origin)
    return out


_dict_new = dict.__new__
_dict_update = dict.update
_dict_setitem = dict.__setitem__
_list_new = list.__new__
_list_extend = list.extend


def _new_list(items: Iterable[Any], origin: str) -> FrozenList:
    out = _list_new(FrozenList)
    _list_extend(out, items)
    _set_list_origin(out, origin)
    return out


def _restore_dict(items: dict, origin: str) -> FrozenDict:
    return _freeze(items, origin, 1)


def _restore_list(items: list, origin: str) -> FrozenList:
    return _freeze(items, origin, 1)


def freeze(value: Any, origin: str = _GENERIC) -> Any:
    """``value`` with every nested dict and list replaced by a frozen one.

    Dicts become :class:`FrozenDict`, lists :class:`FrozenList`, tuples keep being
    tuples (of frozen items), sets become frozensets; anything else is kept as it is.
    Containers already frozen are reused, not copied (they share structure).

    Args:
        value: a JSON-like value.
        origin: the sentence a refused write quotes: what is read-only and how to
            change it instead (e.g. ``"ToolCall.arguments is read-only: rewrite the
            call with call.with_arguments(...)"``).

    Raises:
        JSONTooDeepError: nesting deeper than :data:`~arknb.domain.json_decode.MAX_JSON_DEPTH`
            (a cycle counts as infinitely deep); a ``ValueError``, so pydantic reports it
            as a validation error of the field.
    """
    if type(value) in _SCALARS:
        return value
    return _freeze(value, origin, 1)


def _freeze(value: Any, origin: str, depth: int) -> Any:
    # The exact types come first: payloads and validated fields hold plain dicts and
    # lists, and this walk runs for every event published (DESIGN §5: keep it cheap).
    cls = value.__class__
    if cls is dict:
        return _freeze_dict(value, origin, depth)
    if cls is list:
        return _freeze_list(value, origin, depth)
    if isinstance(value, _FROZEN):
        return value  # frozen all the way down by construction (subclasses too)
    if isinstance(value, dict):
        return _freeze_dict(value, origin, depth)
    if isinstance(value, list):
        return _freeze_list(value, origin, depth)
    if isinstance(value, tuple):
        if depth > MAX_JSON_DEPTH:
            raise JSONTooDeepError()
        items = [v if v.__class__ in _SCALARS else _freeze(v, origin, depth + 1) for v in value]
        if all(a is b for a, b in zip(items, value)):
            return value
        return cls(*items) if hasattr(cls, "_fields") else tuple(items)  # a namedtuple keeps its type
    if isinstance(value, (set, frozenset)):
        return frozenset(value)
    return value


def _freeze_dict(value: dict, origin: str, depth: int) -> FrozenDict:
    if depth > MAX_JSON_DEPTH:
        raise JSONTooDeepError()
    out = _dict_new(FrozenDict)
    _dict_update(out, value)
    # Most dicts hold scalars and frozen values only: one C-speed pass over the values
    # finds out, and only a dict with something to freeze pays for the second one,
    # which dispatches on the exact type inline (model dumps hold plain dicts and lists).
    for item in value.values():
        if item.__class__ not in _KEEP:
            for key, item in dict.items(value):
                kind = item.__class__
                if kind in _KEEP:
                    continue
                if kind is dict:
                    _dict_setitem(out, key, _freeze_dict(item, origin, depth + 1))
                elif kind is list:
                    _dict_setitem(out, key, _freeze_list(item, origin, depth + 1))
                else:
                    frozen = _freeze(item, origin, depth + 1)
                    if frozen is not item:
                        _dict_setitem(out, key, frozen)
            break
    _set_dict_origin(out, origin)
    return out


def _freeze_list(value: list, origin: str, depth: int) -> FrozenList:
    if depth > MAX_JSON_DEPTH:
        raise JSONTooDeepError()
    out = _list_new(FrozenList)
    for item in value:
        if item.__class__ not in _KEEP:
            _list_extend(out, [v if v.__class__ in _KEEP else
                               _freeze_dict(v, origin, depth + 1) if v.__class__ is dict else
                               _freeze(v, origin, depth + 1) for v in value])
            break
    else:
        _list_extend(out, value)
    _set_list_origin(out, origin)
    return out


_KEEP = _SCALARS | {FrozenDict, FrozenList}
_FROZEN = (FrozenDict, FrozenList)
"""Values a frozen container holds as they are: scalars, and containers frozen already."""


def freeze_mapping(value: dict, origin: str) -> FrozenDict:
    """:func:`freeze` for a value known to be a ``dict`` (one call less per event)."""
    if isinstance(value, FrozenDict):
        return value
    return _freeze_dict(value, origin, 1)


def thaw(value: Any) -> Any:
    """A deep mutable copy of a (possibly frozen) JSON-like value: every dict a plain
    ``dict``, every list a plain ``list``; anything else as it is."""
    if isinstance(value, dict):
        return {k: thaw(v) for k, v in value.items()}
    if isinstance(value, list):
        return [thaw(v) for v in value]
    if isinstance(value, tuple) and not hasattr(value, "_fields"):
        return tuple(thaw(v) for v in value)
    return value


class FrozenJSON:
    """Field metadata: the field's dicts and lists are frozen deeply once validated.

    Use as ``Annotated[dict[str, Any], FrozenJSON("AgentState.metadata is read-only: ...")]``
    in a :class:`DeepFrozenModel`, which also freezes the field in ``model_copy(update=...)``
    (pydantic does not validate updates).
    """

    __slots__ = ("origin",)

    def __init__(self, origin: str) -> None:
        self.origin = origin

    def __get_pydantic_core_schema__(self, source: Any, handler: Callable[[Any], Any]) -> Any:
        return AfterValidator(self.freeze).__get_pydantic_core_schema__(source, handler)

    def freeze(self, value: Any) -> Any:
        """``freeze(value, origin)``."""
        return freeze(value, self.origin)

    def __repr__(self) -> str:
        return f"FrozenJSON({self.origin!r})"


class DeepFrozenModel(BaseModel):
    """A frozen pydantic model whose :class:`FrozenJSON` fields stay frozen in
    ``model_copy(update=...)`` too (pydantic copies updates unvalidated)."""

    model_config = ConfigDict(frozen=True)

    __frozen_json__: ClassVar[dict[str, FrozenJSON]] = {}

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        cls.__frozen_json__ = {name: marker for name, info in cls.model_fields.items()
                               for marker in info.metadata if isinstance(marker, FrozenJSON)}

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False):  # type: ignore[override]
        """A copy with ``update`` applied (unvalidated, as pydantic's), its JSON fields frozen.

        The shallow copy is built directly, the way pydantic's own ``__copy__`` builds it:
        the runtime makes one per state change, and pydantic's generic path costs about
        twice as much (``benchmarks/ab.py``).
        """
        if deep or self.__pydantic_extra__ is not None or getattr(self, "__pydantic_private__", None) is not None:
            copied = super().model_copy(update=update, deep=deep)
        else:
            copied = shallow_copy(self, update)
        values = copied.__dict__
        if update:
            for name, marker in self.__frozen_json__.items():
                if name in update:
                    values[name] = marker.freeze(update[name])
        return copied


def shallow_copy(model: Any, update: Mapping[str, Any] | None = None) -> Any:
    """A copy of the pydantic ``model`` with ``update`` applied unvalidated, as
    ``model_copy(update=...)`` makes it, built directly the way pydantic's own ``__copy__``
    builds it (about half the cost of pydantic's generic path). For models without extra
    fields or private attributes; the caller passes values it built."""
    cls = model.__class__
    copied = cls.__new__(cls)
    values = model.__dict__.copy()
    fields_set = model.__pydantic_fields_set__.copy()
    if update:
        values.update(update)
        fields_set.update(update)
    _object_setattr(copied, "__dict__", values)
    _object_setattr(copied, "__pydantic_extra__", None)
    _object_setattr(copied, "__pydantic_fields_set__", fields_set)
    _object_setattr(copied, "__pydantic_private__", None)
    return copied


_object_setattr = object.__setattr__
