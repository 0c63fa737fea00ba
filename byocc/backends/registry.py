"""The pattern registry (TVM's ``relax/backend/pattern_registry.py``).

One process-wide table in registration order. :func:`get_patterns_with_prefix` returns the
entries whose name starts with the prefix, **last registered first** (= priority order for
FuseOpsByPattern, docs/partitioning.md#pattern-entries-and-the-check-context). The built-in backends' tables are handed
in as callables (:func:`defer_table`, by :mod:`byocc.backends.record`, in the order TVM's
conformance runner imports them: cutlass, then cublas) and built on the first use of the
registry. This module imports no other module of ``byocc.backends``; importing it is cheap.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Sequence

from byocc.dpl import FusionPattern
from byocc.dpl import as_fusion_pattern
from byocc.dpl import backend_of

_TABLE: list = []
_DEFERRED: list[Callable[[], Sequence]] = []


def defer_table(table: Callable[[], Sequence]) -> None:
    """Add ``table()``'s entries on the registry's next use (before any later registration)."""
    _DEFERRED.append(table)


def _ensure_builtins() -> None:
    while _DEFERRED:
        table = _DEFERRED.pop(0)
        _TABLE.extend(as_fusion_pattern(e) for e in table())


def register_patterns(patterns: Sequence) -> None:
    """Append entries (FusionPattern or 2-5 tuples); later entries get higher priority."""
    _ensure_builtins()
    _TABLE.extend(as_fusion_pattern(item) for item in patterns)


def remove_patterns(names: Sequence[str]) -> None:
    """Remove every entry with one of these names."""
    _ensure_builtins()
    drop = set(names)
    _TABLE[:] = [e for e in _TABLE if e.name not in drop]


def get_patterns_with_prefix(prefix: str) -> list:
    """Entries whose name starts with ``prefix``, highest priority (last registered) first."""
    _ensure_builtins()
    return [e for e in reversed(_TABLE) if e.name.startswith(prefix)]


def get_pattern(name: str) -> FusionPattern | None:
    """The last registered entry called ``name``, or None."""
    _ensure_builtins()
    for e in reversed(_TABLE):
        if e.name == name:
            return e
    return None


def pattern_prefixes() -> list[str]:
    """Backend names (text before the first ``.``) with at least one entry, sorted (the
    records' names are :func:`byocc.backends.registered_backends`)."""
    _ensure_builtins()
    return sorted({b for b in (backend_of(e.name) for e in _TABLE) if b is not None})


__all__ = [
    "FusionPattern", "defer_table", "get_pattern", "get_patterns_with_prefix", "pattern_prefixes",
    "register_patterns", "remove_patterns",
]
