"""The pattern registry (TVM's ``relax/backend/pattern_registry.py``).

One process-wide table in registration order. :func:`get_patterns_with_prefix` returns the
entries whose name starts with the prefix, **last registered first** (= priority order for
FuseOpsByPattern, spec/partitioning.md section 4). The built-in tables are registered
lazily, on the first use of the registry, in the order TVM's conformance runner imports
them: cutlass, then cublas. Importing this module is cheap.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence

from byocc.dpl import FusionPattern, as_fusion_pattern

# Modules defining ``registration_entries()``, registered in this order.
BUILTIN_TABLES = ("byocc.backends.cutlass.patterns", "byocc.backends.cublas.patterns")

_TABLE: list = []
_builtins_loaded = False


def _ensure_builtins() -> None:
    global _builtins_loaded
    if _builtins_loaded:
        return
    _builtins_loaded = True
    for module_name in BUILTIN_TABLES:
        module = importlib.import_module(module_name)
        _TABLE.extend(as_fusion_pattern(e) for e in module.registration_entries())


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


def registered_backends() -> list:
    """Backend names (text before the first ``.``) with at least one entry, sorted."""
    _ensure_builtins()
    return sorted({e.name.split(".", 1)[0] for e in _TABLE if "." in e.name})


__all__ = [
    "BUILTIN_TABLES", "FusionPattern", "get_pattern", "get_patterns_with_prefix",
    "register_patterns", "registered_backends", "remove_patterns",
]
