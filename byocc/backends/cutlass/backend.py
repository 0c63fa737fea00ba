"""The CUTLASS backend's record (:class:`~byocc.backends.record.Backend`): its pattern table,
NHWC convolutions, the attention rewrites before fusion and the workspace steps after it
(spec/backends.md section 1.1), and its codegen. Its code is imported on first use."""

from __future__ import annotations

from byocc.transform import AllocateWorkspace

from ..record import Backend
from ..record import lazy

BACKEND = Backend(
    name="cutlass",
    table=lazy("byocc.backends.cutlass.patterns:registration_entries"),
    preferred_layout="NHWC",  # conv2d patterns take NHWC data and OHWI kernels
    rewrites=(lazy("byocc.backends.cutlass.rewrites:rewrite_attention"),),
    post_partition=(lazy("byocc.backends.cutlass.workspace:annotate_workspace"), AllocateWorkspace()),
    codegen=lazy("byocc.backends.cutlass.codegen:codegen"),
)

__all__ = ["BACKEND"]
