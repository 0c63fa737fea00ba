"""``relax.backend``: the pattern registry and pattern helpers (:mod:`byocc.backends`).

Submodules as in TVM: ``pattern_registry``, ``patterns``, ``utils``, ``cuda.cutlass``
(``partition_for_cutlass``) and ``cuda.cublas`` (``partition_for_cublas``). The built-in
cutlass and cublas tables are registered on the first use of the registry.
"""

from __future__ import annotations

from .pattern_registry import FusionPattern
from .pattern_registry import get_pattern
from .pattern_registry import get_patterns_with_prefix
from .pattern_registry import register_patterns
from .pattern_registry import remove_patterns

__all__ = [
    "FusionPattern", "get_pattern", "get_patterns_with_prefix", "register_patterns", "remove_patterns",
]


def __getattr__(name: str):
    if name in ("patterns", "utils", "cuda"):
        import importlib

        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
