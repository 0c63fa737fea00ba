"""``relax.backend.cuda.cublas``: ``partition_for_cublas`` (spec/backends.md section 1.2)."""

from __future__ import annotations

from byocc.backends import get_patterns_with_prefix
from byocc.ir import IRModule
from byocc.transform import FuseOpsByPattern


def partition_for_cublas(mod: IRModule, bind_constants: bool = False) -> IRModule:
    """Partition ``mod`` into cuBLAS-supported subgraphs: one pass,
    ``FuseOpsByPattern(get_patterns_with_prefix("cublas"), bind_constants, annotate_codegen=True)``."""
    patterns = get_patterns_with_prefix("cublas")
    return FuseOpsByPattern(patterns, bind_constants=bind_constants, annotate_codegen=True)(mod)


__all__ = ["partition_for_cublas"]
