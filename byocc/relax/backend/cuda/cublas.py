"""``relax.backend.cuda.cublas``: ``partition_for_cublas`` (docs/codegen.md#partition_for_cublas)."""

from __future__ import annotations

from byocc.backends import partition_for_backend
from byocc.ir import IRModule


def partition_for_cublas(mod: IRModule, bind_constants: bool = False) -> IRModule:
    """Partition ``mod`` into cuBLAS-supported subgraphs: one pass,
    ``FuseOpsByPattern(get_patterns_with_prefix("cublas"), bind_constants, annotate_codegen=True)``
    (the cublas record has no rewrites and no steps after fusion)."""
    return partition_for_backend(mod, "cublas", annotate_codegen=True, bind_constants=bind_constants)


__all__ = ["partition_for_cublas"]
