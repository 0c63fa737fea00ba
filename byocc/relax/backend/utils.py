"""``relax.backend.utils``: check-function helpers (:mod:`byocc.backends`)."""

from __future__ import annotations

from byocc.backends import has_leaking_intermediate_variables
from byocc.backends import is_shape_valid_for_cutlass_matmul

__all__ = ["has_leaking_intermediate_variables", "is_shape_valid_for_cutlass_matmul"]
