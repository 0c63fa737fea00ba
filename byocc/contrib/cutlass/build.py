"""``tvm.contrib.cutlass.build``: ``is_shape_valid_for_cutlass_matmul``.

The rule is the one byocc's CUTLASS matmul check applies
(:func:`byocc.backends.is_shape_valid_for_cutlass_matmul`, docs/codegen.md#shared-matching-rules);
this spelling returns a plain ``bool`` as TVM's does (byocc's own carries the reason).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from byocc.backends import is_shape_valid_for_cutlass_matmul as _check


def is_shape_valid_for_cutlass_matmul(lhs_shape: Sequence[Any], rhs_shape: Sequence[Any]) -> bool:
    """Whether CUTLASS's stride-based batch GEMM can take a matmul of these operand
    shapes (ints or symbolic dims): a constant reduction dim, and either one side without
    batch dims (batch product 1) or batch dims provably equal pair by pair, right-aligned
    with the shorter side padded by 1s."""
    return bool(_check(tuple(lhs_shape), tuple(rhs_shape)))


__all__ = ["is_shape_valid_for_cutlass_matmul"]
