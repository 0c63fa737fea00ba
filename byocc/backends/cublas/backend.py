"""The cuBLAS backend's record (:class:`~byocc.backends.record.Backend`): its pattern table
and its codegen, imported on first use; no layout preference, no rewrites and no steps after
fusion (spec/backends.md section 1.2)."""

from __future__ import annotations

from ..record import Backend
from ..record import lazy

BACKEND = Backend(
    name="cublas",
    table=lazy("byocc.backends.cublas.patterns:registration_entries"),
    codegen=lazy("byocc.backends.cublas.codegen:codegen"),
)

__all__ = ["BACKEND"]
