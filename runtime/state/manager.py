"""`StateManager`: the run's namespaced, validated, observable state.

The state is one pydantic model. Schema fields hold the global namespace; every other
key (a namespaced `"<ns>.<key>"` or a global key the schema does not declare, such as
`"llm.usage"`) lives in the model's extra storage, so a predicate can read
`state.done` or `state.model_extra["agent.done"]` alike.

Live writes are validated against the schema field of the same (bare) key and go through
its reducer (`Annotated[list[Message], operator.add]` appends). Restores load raw values:
reducers are never re-applied (pitfall 9). Values are replaced, never mutated in place,
so a change record can hold old and new values without copying them.
"""

from __future__ import annotations

import copy
import functools
import logging
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError
from pydantic_core import from_json, to_jsonable_python

from .ephemeral import Ephemeral, Scope

log = logging.getLogger(__name__)

GLOBAL = ""  # the snapshot key of the global namespace
_MISSING = object()


class StateValidationError(ValueError):
    """A write that the schema rejects; the message names the key and the namespace."""


class Deferred:
    """A restored value loaded on its first read (a checkpoint's long message history): a
    restore costs what it puts back, not the decoding of every message, and the value is
    loaded once, by whoever reads it first (a node, a snapshot, a save).

    `load()` gives the value as validated for its key (it is stored as trusted: not checked
    again); what it raises (a damaged store, say) reaches that reader.
    """

    __slots__ = ("load",)

    def __init__(self, load: Callable[[], Any]):
        self.load = load


def state_schema_of(state: Any) -> type[BaseModel]:
    """The model class of a state schema given as a class or an instance; `ValueError` for anything else
    (a tree file's `Agent(root, state_schema=...)` is user input: one line, not an AttributeError later)."""
    schema = state if isinstance(state, type) else type(state)
    if not issubclass(schema, BaseModel):
        raise ValueError(f"a state schema is a pydantic model (a BaseModel class or instance), "
                         f"not {schema.__name__ if isinstance(state, type) else type(state).__name__}")
    return schema


def normalize_namespace(namespace: str | None) -> str | None:
    """`None`/`""` → global (None); otherwise the namespace itself, if well formed."""
    if namespace is None or namespace == "":
        return None
    if not isinstance(namespace, str):
        raise ValueError(f"namespace must be a string, not {type(namespace).__name__}")
    if namespace != namespace.strip():
        raise ValueError(f"invalid namespace {namespace!r}: surrounding blanks are not allowed")
    if namespace.endswith(".") or namespace.startswith(".") or ".." in namespace:
        raise ValueError(f"invalid namespace {namespace!r}: it must not start or end with '.' or contain '..'")
    return namespace


@dataclass(frozen=True)
class FieldSpec:
    """What the schema says about a key: how to validate, reduce and reset it."""

    attr: str
    adapter: TypeAdapter
    reducer: Callable[[Any, Any], Any] | None
    scope: Scope | None
    default: Callable[[], Any]


@dataclass(frozen=True)
class StateChange:
    """One `update()`: which keys of which namespace changed, with (old, new) values. After a
    restore, a value not decoded yet (a long history) is new as a `Deferred`: its `load()` reads
    it, or read the key from the manager."""

    namespace: str | None
    changes: Mapping[str, tuple[Any, Any]]

    @property
    def keys(self) -> list[str]:
        return list(self.changes)


def _where(namespace: str | None, key: str) -> str:
    return f"{namespace}.{key}" if namespace else key


_SHARED: set[type] = {str, int, float, bool, type(None), tuple, frozenset}  # and frozen models, once seen


def _copy(value: Any) -> Any:
    """Copy what a caller could mutate; frozen models and scalars are shared (a message history
    is copied as one list of the same messages, at a type test per item)."""
    shared = _SHARED
    if isinstance(value, list):
        return [v if type(v) in shared else _copy(v) for v in value]
    if isinstance(value, dict):
        return {k: v if type(v) in shared else _copy(v) for k, v in value.items()}
    if value is None or isinstance(value, str | int | float | bool | tuple | frozenset):
        return value
    if isinstance(value, BaseModel):
        if value.model_config.get("frozen"):
            shared.add(type(value))
            return value
        return value.model_copy(deep=True)
    return copy.deepcopy(value)


# Built once per schema (a model class and a TypeAdapter per field: 1.1 ms for ReActState),
# not per manager: the studio makes one for each checkpoint of the past it shows.
@functools.lru_cache(maxsize=64)
def _with_extra(schema: type[BaseModel]) -> type[BaseModel]:
    if schema.model_config.get("extra") == "allow":
        return schema
    return type(schema.__name__, (schema,), {"model_config": ConfigDict(**{**schema.model_config, "extra": "allow"}),
                                             "__module__": schema.__module__})


@functools.lru_cache(maxsize=64)
def _field_specs(schema: type[BaseModel]) -> Mapping[str, FieldSpec]:
    specs: dict[str, FieldSpec] = {}
    for attr, info in schema.model_fields.items():
        reducer = next((m for m in info.metadata if callable(m) and not isinstance(m, Ephemeral)), None)
        scope = next((m.scope for m in info.metadata if isinstance(m, Ephemeral)), None)
        # keep pydantic's own constraints (Field(ge=0), validators…), drop the markers it cannot use
        constraints = [m for m in info.metadata if m is not reducer and not isinstance(m, Ephemeral)]
        adapter = TypeAdapter(Annotated[(info.annotation, *constraints)] if constraints else info.annotation)

        factory = info.default_factory
        if factory is not None and not info.default_factory_takes_validated_data:
            default = factory  # pydantic's get_default() inspects the factory's signature on every call
        else:
            default = functools.partial(info.get_default, call_default_factory=True)
        spec = FieldSpec(attr, adapter, reducer, scope, default)
        specs[attr] = spec
        if info.alias:
            specs[info.alias] = spec
    return MappingProxyType(specs)


class StateManager:
    """Namespaced key/value state over a pydantic schema, with reducers and change signals."""

    def __init__(self, state: BaseModel | type[BaseModel]):
        schema = state_schema_of(state)
        self.schema: type[BaseModel] = schema
        self._cls = _with_extra(schema)
        initial = {attr: getattr(state, attr) for attr in schema.model_fields} if isinstance(state, BaseModel) else {}
        self._extra_initial = dict(state.model_extra or {}) if isinstance(state, BaseModel) else {}
        self._specs = _field_specs(schema)
        self._model: BaseModel = self._cls.model_construct(**{**self._defaults(), **initial})
        self._model.__pydantic_extra__ = dict(self._extra_initial)
        self._namespaced: dict[str, set[str]] = {}  # namespace -> keys stored in extras
        self._subscribers: list[Callable[[StateChange], Any]] = []
        self._wake_listeners: list[Callable[[], Any]] = []
        self._dirty: set[tuple[str, str]] = set()
        self._batch = 0  # counts `take_dirty` calls: a batch of writes is what one checkpoint stores
        self._writers: dict[tuple[str, str], tuple[int, dict[str, None]]] = {}  # slot -> (batch, nodes)
        self._deferred: set[tuple[str | None, str]] = set()  # slots that may hold a `Deferred` still

    def _defaults(self) -> dict[str, Any]:
        return {attr: self._specs[attr].default() for attr in self.schema.model_fields}

    # -- reading -------------------------------------------------------------------
    @property
    def model(self) -> BaseModel:
        """The live state model (read it, never write it: use `update`)."""
        self._load_deferred()
        return self._model

    def field(self, key: str) -> FieldSpec | None:
        """The schema field a (bare) key refers to, if any."""
        return self._specs.get(key)

    def has_field(self, key: str) -> bool:
        return key in self._specs

    def _raw(self, key: str, namespace: str | None) -> Any:
        if namespace is None:
            spec = self._specs.get(key)
            if spec is not None:
                value = self._model.__dict__.get(spec.attr, _MISSING)
            else:
                value = self._model.__pydantic_extra__.get(key, _MISSING)
        else:
            value = self._model.__pydantic_extra__.get(f"{namespace}.{key}", _MISSING)
        if type(value) is Deferred:
            value = value.load()
            self._put(key, value, namespace)  # not a write: the key stays clean
            self._deferred.discard((namespace, key))
        return value

    def _load_deferred(self) -> None:
        if self._deferred:
            for namespace, key in list(self._deferred):
                self._raw(key, namespace)  # loads it, or raises why not (and it stays deferred)
            self._deferred.clear()  # the rest were written over

    def stored(self, key: str, namespace: str | None = None, default: Any = None) -> Any:
        """The value as stored, not copied (read it, never mutate it: values are replaced, not
        changed in place), or `default` when never written: for observers that compare by
        identity what changed, such as a checkpointer."""
        value = self._raw(key, normalize_namespace(namespace))
        return default if value is _MISSING else value

    def get(self, key: str, namespace: str | None = None, default: Any = None) -> Any:
        """A copy of the value; a schema field never written in this namespace gives its default."""
        namespace = normalize_namespace(namespace)
        value = self._raw(key, namespace)
        if value is _MISSING:
            spec = self._specs.get(key)
            if spec is not None and default is None:
                return spec.default()
            return default
        return _copy(value)

    def contains(self, key: str, namespace: str | None = None) -> bool:
        return self._raw(key, normalize_namespace(namespace)) is not _MISSING

    def namespaces(self) -> list[str | None]:
        return [None, *sorted(ns for ns in self._namespaced if ns != GLOBAL)]

    def stored_view(self, namespace: str | None = None) -> dict[str, Any]:
        """Every key of one namespace as stored, not copied (read, never mutate): what `stored` gives
        for one key, for an observer keeping what a tick left without copying or converting it."""
        return dict(self._items(normalize_namespace(namespace)))

    def view(self, namespace: str | None = None) -> dict[str, Any]:
        """Every key of one namespace as a plain dict (copied)."""
        namespace = normalize_namespace(namespace)
        return {key: _copy(value) for key, value in self._items(namespace)}

    def _items(self, namespace: str | None) -> Iterable[tuple[str, Any]]:
        self._load_deferred()
        extra = self._model.__pydantic_extra__
        if namespace is None:
            for attr in self.schema.model_fields:
                yield attr, self._model.__dict__[attr]
            for key in self._namespaced.get(GLOBAL, ()):
                yield key, extra[key]
        else:
            for key in sorted(self._namespaced.get(namespace, ())):
                yield key, extra[f"{namespace}.{key}"]

    # -- writing -------------------------------------------------------------------
    def validate(self, key: str, value: Any, namespace: str | None = None) -> Any:
        """The value as the schema would store it (a copy: the caller keeps no handle on state);
        raises `StateValidationError` naming the key."""
        spec = self._specs.get(key)
        if spec is None:
            return _copy(value)
        try:
            return _copy(spec.adapter.validate_python(value))
        except ValidationError as exc:
            raise self._invalid(namespace, key, value, exc) from None

    @staticmethod
    def _invalid(namespace: str | None, key: str, value: Any, exc: ValidationError) -> StateValidationError:
        first = exc.errors()[0]
        loc = ".".join(str(p) for p in first.get("loc", ()))
        detail = f"{loc}: {first['msg']}" if loc else first["msg"]
        return StateValidationError(f"state key '{_where(namespace, key)}': {detail} (got {value!r:.80})")

    def validate_json(self, key: str, text: str | bytes, namespace: str | None = None) -> Any:
        """`validate()` of a value given as JSON text, parsed and validated in one pass (a stored
        message history: no Python objects built twice, nothing to copy); `StateValidationError`."""
        spec = self._specs.get(key)
        try:
            return spec.adapter.validate_json(text) if spec is not None else from_json(text)
        except ValueError as exc:  # pydantic's ValidationError, or JSON that does not parse
            if not isinstance(exc, ValidationError):
                raise StateValidationError(f"state key '{_where(namespace, key)}': not JSON ({exc})") from None
            raise self._invalid(namespace, key, text, exc) from None

    def update(self, values: Mapping[str, Any], namespace: str | None = None, signal: bool = True, *,
               writer: str | None = None) -> StateChange:
        """Apply several writes as one update: validate, reduce, store, notify, then wake. `writer`: the
        path of the node writing, kept for `writers`."""
        namespace = normalize_namespace(namespace)
        prepared = []
        for key, value in values.items():
            value = self.validate(key, value, namespace)
            spec = self._specs.get(key)
            old = self._raw(key, namespace)
            if spec is not None and spec.reducer is not None:
                base = spec.default() if old is _MISSING else old
                new = spec.reducer(base, value)
            else:
                new = value
            prepared.append((key, old, new))
        changes = {}
        for key, old, new in prepared:
            slot = self._store(key, new, namespace)
            if writer is not None:
                self._wrote(slot, writer)
            if old is _MISSING or old is not new and old != new:
                changes[key] = (None if old is _MISSING else old, new)
        return self._notify(namespace, changes, signal)

    def load(self, values: Mapping[str, Any], namespace: str | None = None, signal: bool = False) -> StateChange:
        """Store values as they are (validated, reducers NOT applied): restore, fork, edits."""
        return self._load(values, normalize_namespace(namespace), signal, ())

    def _load(self, values: Mapping[str, Any], namespace: str | None, signal: bool,
              trusted: Collection[str]) -> StateChange:
        prepared = [(key, self._raw(key, namespace),
                     value if key in trusted else self.validate(key, value, namespace))
                    for key, value in values.items()]
        changes = {}
        for key, old, new in prepared:
            self._writers.pop(self._store(key, new, namespace), None)  # loaded: no node wrote it
            if type(new) is Deferred:
                self._deferred.add((namespace, key))
            if old is _MISSING or old != new:
                changes[key] = (None if old is _MISSING else old, new)
        return self._notify(namespace, changes, signal)

    def _store(self, key: str, value: Any, namespace: str | None) -> tuple[str, str]:
        """Put the value and mark its slot dirty; returns the slot."""
        spec = self._specs.get(key) if namespace is None else None
        # a field written by its alias is dirty by its attribute, the one name snapshots use: a
        # checkpoint holding both names would restore whichever it happened to list last
        slot = (GLOBAL, spec.attr) if spec is not None else (namespace or GLOBAL, key)
        self._dirty.add(slot)
        self._put(key, value, namespace)
        return slot

    def _wrote(self, slot: tuple[str, str], writer: str) -> None:
        entry = self._writers.get(slot)
        if entry is None or entry[0] != self._batch:  # the first write of a new batch
            entry = self._writers[slot] = (self._batch, {})
        entry[1][writer] = None

    def writers(self, key: str, namespace: str | None = None) -> list[str]:
        """The nodes that wrote `key` in the last batch of writes to it (since a `take_dirty`), in order:
        who put its value there, for a save that cannot store it to name them. Empty when no node did
        (a restore, an edit, the run's input)."""
        spec = self._specs.get(key) if namespace is None else None
        entry = self._writers.get((GLOBAL, spec.attr) if spec is not None else (namespace or GLOBAL, key))
        return list(entry[1]) if entry is not None else []

    def _put(self, key: str, value: Any, namespace: str | None) -> None:
        if namespace is None:
            spec = self._specs.get(key)
            if spec is not None:
                self._model.__dict__[spec.attr] = value
                return
            self._namespaced.setdefault(GLOBAL, set()).add(key)
            self._model.__pydantic_extra__[key] = value
            return
        self._namespaced.setdefault(namespace, set()).add(key)
        self._model.__pydantic_extra__[f"{namespace}.{key}"] = value

    def _remove(self, key: str, namespace: str | None) -> None:
        self._dirty.add((namespace or GLOBAL, key))
        owner = namespace or GLOBAL
        self._namespaced.get(owner, set()).discard(key)
        if not self._namespaced.get(owner, True):
            del self._namespaced[owner]
        self._model.__pydantic_extra__.pop(f"{namespace}.{key}" if namespace else key, None)

    def clear(self, namespace: str | None) -> StateChange:
        """Drop every key of a namespace (global: back to the schema's defaults)."""
        namespace = normalize_namespace(namespace)
        changes: dict[str, tuple[Any, Any]] = {}
        for key, old in list(self._items(namespace)):
            spec = self._specs.get(key) if namespace is None else None
            if spec is not None:
                new = spec.default()
                self._store(key, new, None)
                if old != new:
                    changes[key] = (old, new)
            else:
                self._remove(key, namespace)
                changes[key] = (old, None)
        return self._notify(namespace, changes, signal=False)

    def reset_ephemeral(self, scope: Scope, namespace: str | None | type[Ellipsis] = ...) -> None:
        """Reset fields marked `Ephemeral(scope)` to their defaults: in one namespace, or everywhere (`...`)."""
        targets = self.namespaces() if namespace is ... else [normalize_namespace(namespace)]
        for ns in targets:
            resets = {key: spec.default() for key, spec in self._specs.items()
                      if spec.scope == scope and key == spec.attr
                      and (ns is None or self._raw(key, ns) is not _MISSING)}
            if resets:
                self.load(resets, ns)

    # -- observing -----------------------------------------------------------------
    def subscribe(self, callback: Callable[[StateChange], Any]) -> Callable[[], None]:
        """Call `callback(StateChange)` after every update that changed something."""
        self._subscribers.append(callback)
        return lambda: self._subscribers.remove(callback) if callback in self._subscribers else None

    def add_wake_listener(self, callback: Callable[[], Any]) -> Callable[[], None]:
        self._wake_listeners.append(callback)
        return lambda: self._wake_listeners.remove(callback) if callback in self._wake_listeners else None

    def signal(self) -> None:
        """Wake whoever waits on this state (the runner): something worth a tick happened."""
        for listener in tuple(self._wake_listeners):
            listener()

    def _notify(self, namespace: str | None, changes: dict[str, tuple[Any, Any]], signal: bool) -> StateChange:
        change = StateChange(namespace, changes)
        if changes:
            for subscriber in tuple(self._subscribers):
                try:
                    subscriber(change)
                except Exception:  # an observer's bug must not fail the node that wrote
                    log.exception("state subscriber %r failed", subscriber)
        if signal:
            self.signal()
        return change

    def take_dirty(self) -> set[tuple[str, str]]:
        """The (namespace, key) pairs written since the last call (what a checkpoint must store)."""
        dirty, self._dirty = self._dirty, set()
        self._batch += 1
        return dirty

    def put_back_dirty(self, slots: set[tuple[str, str]]) -> None:
        """Pairs a `take_dirty` gave whose values were never stored (a checkpoint refused): the next
        call gives them again."""
        self._dirty |= slots

    # -- snapshots -----------------------------------------------------------------
    def snapshot(self) -> dict[str, dict[str, Any]]:
        """Every namespace as plain JSON-able data: {"" (global): {...}, "<ns>": {...}}."""
        out: dict[str, dict[str, Any]] = {}
        for ns in self.namespaces():
            out[ns or GLOBAL] = {key: to_jsonable_python(value, fallback=repr) for key, value in self._items(ns)}
        return out

    def restore(self, snapshot: Mapping[str, Mapping[str, Any]],
                trusted: Mapping[str, Collection[str]] | None = None) -> None:
        """Replace the whole state with a snapshot (raw values: no reducers).

        `trusted` names, per namespace, keys whose values this manager validated before and
        nobody changes in place (a checkpointer's decoded lists; state values are replaced,
        never mutated): stored without validating and copying them again, which is most of
        a restore's time for a long history. A trusted value may be a `Deferred`, loaded
        when first read.
        """
        self._deferred = set()
        self._model.__pydantic_extra__ = dict(self._extra_initial)
        for attr, value in self._defaults().items():
            self._model.__dict__[attr] = value
        self._namespaced = {}
        for ns, values in snapshot.items():
            self._load(values, normalize_namespace(ns), False, (trusted or {}).get(ns, ()))
        self._dirty = set()
        self._writers = {}


__all__ = ["GLOBAL", "Deferred", "FieldSpec", "StateChange", "StateManager", "StateValidationError", "normalize_namespace",
           "state_schema_of"]
