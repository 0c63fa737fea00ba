"""``tvm.contrib.cutlass``: CUTLASS helpers; ``build.is_shape_valid_for_cutlass_matmul``."""

from __future__ import annotations

from . import build

__all__ = ["build"]
