"""ExtensionHost: the runtime's side of the extension seam (DESIGN §14).

The facade owns one host. It installs the extensions (setup, hooks, approval kinds),
merges their tools with the user's and their sections with the system prompt for each
model call, and routes pending items to their :class:`ApprovalKind`. The loop asks the
host; it never names an extension.
"""

from __future__ import annotations

import inspect
import re
import weakref
from typing import TYPE_CHECKING, Any, Callable, Iterable

from ..domain import AgentMessage, ArkError, ErrorCode, ErrorLayer, ToolCall, ToolResult, invalid_argument
from ..events import EventTypes
from ..hooks import AgentHook, HookRegistry
from ..state import AgentState, ApprovalDecision, ApprovalDecisionResult, PendingApprovalBatch, PendingApprovalItem
from ..tools import Tool, ToolRegistry
from ._redaction import publish_foreign
from .extensions import ApprovalKind, Extension, ExtensionScope, Resolution, SaveResult, WaitingCall, _ScopePorts

if TYPE_CHECKING:
    from .runtime import AgentRuntime

__all__ = ["ExtensionHost", "ToolKind", "make_scope"]

_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_.\-]{0,63}$")


class ToolKind(ApprovalKind):
    """The runtime's own kind: a dangerous or hook-deferred tool call (approve runs it)."""

    name = "tool"


class ExtensionHost:
    """Installed extensions, their hooks (a registry of their own) and the approval kinds."""

    __slots__ = ("extensions", "hooks", "_kinds", "_default_kind", "_tools_cache", "_system_cache",
                 "_restore_pending", "last_sections")

    def __init__(self, extensions: Iterable[Any], *, kinds: Iterable[ApprovalKind] = ()) -> None:
        checked: list[Extension] = []
        names: set[str] = set()
        for ext in extensions:
            if isinstance(ext, type) and issubclass(ext, Extension):
                raise invalid_argument(f"extensions= expects Extension instances, got the class {ext.__name__}; "
                                       f"call it first: {ext.__name__}()")
            if not isinstance(ext, Extension):
                raise invalid_argument(f"extensions= expects arknb Extension instances, got {type(ext).__name__}")
            name = ext.name
            if not isinstance(name, str) or not _NAME.match(name):
                raise invalid_argument(f"extension {type(ext).__name__} needs a name (1-64 letters, digits, '_', "
                                       f"'.', '-', starting with a letter), got {name!r}")
            if name in names:
                raise invalid_argument(f"two extensions are named {name!r}; an extension's name is the key of its "
                                       "saved state slice, so it must be unique per runtime")
            names.add(name)
            checked.append(ext)
        self.extensions: tuple[Extension, ...] = tuple(checked)
        self.hooks = HookRegistry()
        """The extensions' hooks; the pipeline runs them after the user's (``runtime.hooks``)."""
        self._kinds: dict[str, ApprovalKind] = {}
        for kind in kinds:
            self._add_kind(kind, "the runtime")
        self._default_kind = self._kinds.get("tool") or ToolKind()
        self._tools_cache: tuple[Any, tuple[Tool, ...], ToolRegistry] | None = None
        self._system_cache: tuple[tuple[AgentMessage, ...], tuple[str, ...], tuple[AgentMessage, ...]] | None = None
        self.last_sections: tuple[tuple[str, str], ...] = ()  # (extension, section) of the last system message
        self._restore_pending: AgentState | None = None

    def __bool__(self) -> bool:
        return bool(self.extensions)

    # -- installation -----------------------------------------------------------------

    def install(self, make: Callable[[str], ExtensionScope]) -> None:
        """Set every extension up, in order, and collect its hooks and approval kinds."""
        for ext in self.extensions:
            _guarded(ext, "setup", ext.setup, make(ext.name))
            for hook in _guarded(ext, "hooks", lambda: tuple(ext.hooks() or ())):
                self._add_hook(ext, hook)
            for kind in _guarded(ext, "approval_kinds", lambda: tuple(ext.approval_kinds() or ())):
                self._add_kind(kind, f"extension {ext.name!r}")

    def add(self, ext: Any, make: Callable[[str], ExtensionScope]) -> None:
        """Install one more extension after construction (``AgentRuntime.add_extension``)."""
        if not isinstance(ext, Extension):
            raise invalid_argument(f"add_extension expects an arknb Extension instance, got {type(ext).__name__}")
        if not isinstance(ext.name, str) or not _NAME.match(ext.name):
            raise invalid_argument(f"extension {type(ext).__name__} needs a name, got {ext.name!r}")
        if any(other.name == ext.name for other in self.extensions):
            raise invalid_argument(f"an extension named {ext.name!r} is installed already; names must be unique")
        self.extensions = (*self.extensions, ext)
        _guarded(ext, "setup", ext.setup, make(ext.name))
        for hook in _guarded(ext, "hooks", lambda: tuple(ext.hooks() or ())):
            self._add_hook(ext, hook)
        for kind in _guarded(ext, "approval_kinds", lambda: tuple(ext.approval_kinds() or ())):
            self._add_kind(kind, f"extension {ext.name!r}")
        self._tools_cache = self._system_cache = None

    def _add_hook(self, ext: Extension, hook: Any) -> None:
        if not isinstance(hook, AgentHook):
            raise invalid_argument(f"extension {ext.name!r}: hooks() must yield AgentHook instances, "
                                   f"got {type(hook).__name__}")
        name = getattr(hook, "name", None) or type(hook).__name__
        if name in self.hooks:
            raise invalid_argument(f"extension {ext.name!r}: a hook named {name!r} is already installed by "
                                   "an extension; give the hook a distinct `name`")
        entry = self.hooks.add(hook, name=name)
        # An extension's hook is configuration, not a notebook experiment: its failure fails
        # the run instead of being skipped (a gate must never fail open).
        entry.propagate = True

    def _add_kind(self, kind: Any, owner: str) -> None:
        if not isinstance(kind, ApprovalKind):
            raise invalid_argument(f"{owner}: approval_kinds() must yield ApprovalKind instances, "
                                   f"got {type(kind).__name__}")
        if not isinstance(kind.name, str) or not _NAME.match(kind.name):
            raise invalid_argument(f"{owner}: approval kind {type(kind).__name__} needs a name, got {kind.name!r}")
        if kind.name in self._kinds:
            raise invalid_argument(f"{owner}: an approval kind named {kind.name!r} is already installed")
        self._kinds[kind.name] = kind

    # -- what the model is offered --------------------------------------------------------

    def offered_tools(self, user: ToolRegistry, state: AgentState) -> ToolRegistry:
        """The user's tools plus every extension's tools for ``state`` (cached while unchanged)."""
        if not self.extensions:
            return user
        owners: list[tuple[str, Tool]] = []
        for ext in self.extensions:
            for item in _guarded(ext, "tools", lambda: tuple(ext.tools(state) or ())):
                if not isinstance(item, Tool):
                    raise invalid_argument(f"extension {ext.name!r}: tools() must return @ark.tool objects "
                                           f"(built once), got {type(item).__name__}")
                owners.append((ext.name, item))
        if not owners:
            return user  # nothing contributed for this state: the user's registry as it is
        contributed = tuple(item for _, item in owners)
        definitions = user.definitions()  # the same tuple until the user registers a tool
        cache = self._tools_cache
        if cache is not None and cache[0] is definitions and _same(cache[1], contributed):
            return cache[2]
        merged = ToolRegistry(user)
        owner_of = {name: "the runtime's tools=" for name in user.names()}
        for ext_name, item in owners:
            taken = merged.get(item.name)
            if taken is item:
                continue  # one tool offered twice (e.g. by two skills): the same tool
            if taken is not None:
                raise invalid_argument(
                    f"extension {ext_name!r} offers a tool named {item.name!r}, but {owner_of[item.name]} "
                    "already has a tool of that name; rename one of them (@ark.tool(name=...))")
            merged.register(item)
            owner_of[item.name] = f"extension {ext_name!r}"
        self._tools_cache = (definitions, contributed, merged)
        return merged

    def system_messages(self, base: tuple[AgentMessage, ...], state: AgentState) -> tuple[AgentMessage, ...]:
        """The system message of the next call: the system prompt, then each extension's section."""
        sections: list[str] = []
        named: list[tuple[str, str]] = []
        for ext in self.extensions:
            text = _guarded(ext, "instructions", ext.instructions, state)
            if text is None:
                continue
            if not isinstance(text, str):
                raise invalid_argument(f"extension {ext.name!r}: instructions() must return a str or None, "
                                       f"got {type(text).__name__}")
            if text.strip():
                sections.append(text.strip())
                named.append((ext.name, text.strip()))
        self.last_sections = tuple(named)  # who wrote what (what the model saw, DESIGN §16)
        if not sections:
            return base
        key = tuple(sections)
        cache = self._system_cache
        if cache is not None and cache[0] is base and cache[1] == key:
            return cache[2]
        parts = [base[0].text] if base else []
        message = (AgentMessage.system("\n\n".join(parts + sections)),)
        self._system_cache = (base, key, message)
        return message

    # -- pending items ----------------------------------------------------------------------

    def kind(self, name: str) -> ApprovalKind:
        """The kind called ``name``; an unknown kind (a batch saved by a runtime with an
        extension this one lacks) is treated as a plain tool approval, so it never wedges."""
        return self._kinds.get(name) or self._default_kind

    def answer(self, item: PendingApprovalItem) -> ToolResult | None:
        """The result a decided item gets without running (None: run it), by its own kind."""
        return self.kind(item.kind).answer(item)

    def resolve(self, batch: PendingApprovalBatch) -> Resolution:
        """How a fully decided batch continues, by the batch's kind."""
        return self.kind(batch.kind).resolve(batch, self.answer)

    def announce(self, rt: AgentRuntime, batch: PendingApprovalBatch) -> None:
        """Each kind present in ``batch`` publishes its own events (after the mandatory save)."""
        seen: dict[str, list[PendingApprovalItem]] = {}
        for item in batch.items:
            seen.setdefault(item.kind, []).append(item)
        for name, items in seen.items():
            kind = self.kind(name)
            try:
                kind.announce(batch, tuple(items))
            except Exception as exc:  # an announcement is an observation: it never undoes the saved pause
                _diagnostic(rt, f"approval_kind:{name}", "announce", exc)

    async def on_decided(self, rt: AgentRuntime, batch: PendingApprovalBatch, item: PendingApprovalItem) -> None:
        """Tell the item's kind about a decision that was applied."""
        try:
            await self.kind(item.kind).on_decided(batch, item)
        except Exception as exc:  # the decision stands; the failure is reported, not raised at the caller
            _diagnostic(rt, f"approval_kind:{item.kind}", "on_decided", exc)

    def pending_items(self, batch: PendingApprovalBatch | None) -> list[PendingApprovalItem]:
        """The items a person decides now: the batch's pending items, each as its kind expands it."""
        if batch is None:
            return []
        listed: list[PendingApprovalItem] = []
        for item in batch.items:
            if not item.is_pending():
                continue
            expanded = self.kind(item.kind).expand(item)
            listed.extend((item,) if expanded is None else expanded)
        return listed

    async def route(self, batch: PendingApprovalBatch | None, approval_id: str, decision: ApprovalDecision | None,
                    reason: str | None, *, resolution: str | None = None,
                    text: str | None = None) -> ApprovalDecisionResult | None:
        """Decide an id one of the batch's kinds listed for an item (None: not such an id):
        an approval (``decision``), or with ``resolution`` an in-doubt call's fate."""
        if batch is None or batch.find(approval_id) is not None:
            return None
        for item in batch.items:
            if item.is_pending():
                kind = self.kind(item.kind)
                if resolution is not None:
                    routed = await kind.route_in_doubt(batch, item, approval_id, resolution, text)
                else:
                    routed = await kind.route(batch, item, approval_id, decision, reason)
                if routed is not None:
                    return routed
        return None

    def blocks_input_error(self, batch: PendingApprovalBatch) -> ArkError:
        """What new input gets while ``batch`` waits."""
        return self.kind(batch.kind).blocks_input_error(batch)

    def continued_by_resume(self, batch: PendingApprovalBatch | None) -> list[PendingApprovalItem]:
        """The pending items of ``batch`` that ``resume()`` approves, if every pending item
        waits for no person (:meth:`ApprovalKind.continues_on_resume`); else none."""
        pending = [item for item in batch.items if item.is_pending()] if batch is not None else []
        if pending and all(self.kind(item.kind).continues_on_resume(item) for item in pending):
            return pending
        return []

    # -- restore ------------------------------------------------------------------------------

    def mark_restored(self, state: AgentState) -> None:
        """Remember that the runtime adopted saved state; :meth:`restored` tells the extensions."""
        if self.extensions:
            self._restore_pending = state

    async def restored(self) -> None:
        """Call every extension's ``on_restore`` once for the adopted state (idempotent)."""
        state = self._restore_pending
        if state is None:
            return
        self._restore_pending = None
        for ext in self.extensions:
            outcome = _guarded(ext, "on_restore", ext.on_restore, state)
            if inspect.isawaitable(outcome):
                try:
                    await outcome
                except ArkError:
                    raise
                except Exception as exc:
                    raise _failed(ext, "on_restore", exc) from exc


    async def waiting_calls(self, run_id: str, calls: list[ToolCall]) -> list[WaitingCall]:
        """What the extensions say of an interrupted run's unanswered ``calls``: those that
        wait for a person elsewhere (:meth:`Extension.waiting_calls`), one per call."""
        found: dict[str, WaitingCall] = {}
        for ext in self.extensions:
            outcome = _guarded(ext, "waiting_calls", ext.waiting_calls, run_id, tuple(calls))
            if inspect.isawaitable(outcome):
                try:
                    outcome = await outcome
                except ArkError:
                    raise
                except Exception as exc:
                    raise _failed(ext, "waiting_calls", exc) from exc
            for waiting in outcome or ():
                if not isinstance(waiting, WaitingCall) or waiting.kind not in self._kinds:
                    raise _failed(ext, "waiting_calls", TypeError(
                        f"expected WaitingCall items of a kind it declared, got {waiting!r}"))
                found.setdefault(waiting.call.id, waiting)
        return [found[call.id] for call in calls if call.id in found]

    async def close(self, rt: AgentRuntime, grace: float) -> None:
        """Call every extension's ``on_close`` (the runtime is being closed); a failure is a
        diagnostic, never a reason not to close."""
        for ext in self.extensions:
            try:
                outcome = ext.on_close(grace)
                if inspect.isawaitable(outcome):
                    await outcome
            except Exception as exc:
                _diagnostic(rt, f"extension:{ext.name}", "on_close", exc)


def make_scope(rt: AgentRuntime, name: str) -> ExtensionScope:
    """The scope of extension ``name`` on runtime ``rt``.

    The scope reaches its runtime through a weak reference: the runtime owns its
    extensions, so a strong one back would keep every finished runtime in a cycle until
    the garbage collector ran (see ``_weak.py``).
    """
    from ._persistence import persist  # the persistence phase imports the runtime's helpers

    ref = weakref.ref(rt)

    def live() -> AgentRuntime:
        runtime = ref()
        if runtime is None:
            raise ArkError(ErrorLayer.RUNTIME, ErrorCode.INTERNAL_ERROR,
                           f"extension {name!r}: its runtime no longer exists")
        return runtime

    def set_slice(key: str, value: Any) -> None:
        runtime = live()
        slices = dict(runtime.state.extensions)
        if value is None:
            slices.pop(key, None)
        else:
            slices[key] = value
        runtime._set_state(extensions=slices)

    async def save(reason: str, mandatory: bool) -> SaveResult:
        if not isinstance(reason, str) or not reason:
            raise invalid_argument(f"extension {name!r}: persist() needs a reason string")
        runtime = live()
        outcome = await persist(runtime, runtime._active, reason, mandatory=bool(mandatory))
        return SaveResult(ok=outcome.ok, skipped=outcome.skipped, error=outcome.error)

    def run_id() -> str | None:
        active = live()._active
        return active.run_id if active is not None else None

    def runtime_options() -> dict[str, Any]:
        runtime = live()
        return {"model": runtime.model, "tools": ToolRegistry(runtime.tools), "hooks": runtime.hooks.copy(),
                "storage": runtime.storage, "system_prompt": runtime.system_prompt, "config": runtime.config,
                "max_turns": runtime.max_turns, "require_approval": runtime.require_approval,
                "secrets": runtime.secret_lint.known_values}

    ports = _ScopePorts(
        session_id=lambda: live().session_id, state=lambda: live().state, run_id=run_id,
        tools=lambda: live()._offered_tools(), set_slice=set_slice,
        emit=lambda event_type, payload: live()._emit(event_type, payload), persist=save,
        clock=lambda: live()._clock(), new_id=lambda prefix: live()._new_id(prefix),
        runtime_options=runtime_options, controller=lambda: live().controller,
        call_model=lambda request, purpose: own_model_call(live(), request, purpose),
        took_over=lambda: live()._takeover, republish=lambda event: publish_foreign(live(), event))
    return ExtensionScope(name, model=rt.model, bus=rt.bus, ports=ports)


def _same(a: tuple, b: tuple) -> bool:
    return len(a) == len(b) and all(x is y for x, y in zip(a, b))


def _guarded(ext: Extension, method: str, fn: Callable, *args: Any) -> Any:
    try:
        return fn(*args)
    except ArkError:
        raise
    except Exception as exc:
        raise _failed(ext, method, exc) from exc


def _failed(ext: Extension, method: str, exc: BaseException) -> ArkError:
    return ArkError(ErrorLayer.RUNTIME, ErrorCode.INTERNAL_ERROR,
                    f"extension {ext.name!r} failed in {method}(): {type(exc).__name__}: {exc}")


def _diagnostic(rt: AgentRuntime, hook: str, slot: str, exc: BaseException) -> None:
    rt._emit(EventTypes.HOOK_DIAGNOSTIC, lambda: {
        "slot": slot, "hook": hook, "kind": "exception", "message": f"{type(exc).__name__}: {exc}",
        "fail_closed": False})


async def own_model_call(rt: AgentRuntime, request: Any, purpose: str) -> Any:
    """An extension's model call (``ExtensionScope.call_model``): announced, counted, cancellable."""
    from ..events.envelope import flat_items, flat_payload
    from ..hooks.pipeline import jsonable

    ctx = rt._active
    turn = ctx.turn if ctx is not None else 0
    rt._emit(EventTypes.LLM_BEFORE, lambda: flat_payload(
        turn=turn, attempt=0, model=request.config.model or None, message_count=len(request.messages),
        tools=flat_items(t.name for t in request.tools), responded_by_hook=False, purpose=purpose))
    response = await rt.model.generate(request, cancel=ctx.cancel if ctx is not None else None)
    if ctx is not None:
        ctx.usage = ctx.usage + response.usage
    rt._set_state(usages=rt.state.usages + (response.usage,))
    message = response.message
    rt._emit(EventTypes.LLM_AFTER, lambda: flat_payload(
        turn=turn, message=jsonable(message), finish_reason=response.finish_reason.value,
        usage=flat_payload(response.usage.model_dump()), raw_text=message.text,
        raw_reasoning=message.reasoning_text, retried=False, purpose=purpose))
    return response
