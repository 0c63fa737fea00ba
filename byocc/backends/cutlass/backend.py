"""The CUTLASS backend's record (:class:`~byocc.backends.record.Backend`): its pattern table,
NHWC convolutions, the attention rewrites before fusion and the workspace steps after it
(docs/codegen.md#partition_for_cutlass), its codegen and the codegen's options. Its code is imported
on first use."""

from __future__ import annotations

from byocc.transform import AllocateWorkspace

from ..options import CodegenOption
from ..options import OptionSchema
from ..record import Backend
from ..record import lazy

#: The GPU architectures the CUTLASS codegen generates kernel variants for, in dispatch order.
ARCHS = ("sm_90a", "sm_80")

#: What the CUTLASS codegen reads from ``target_options["cutlass"]``.
OPTIONS = OptionSchema((
    CodegenOption("arch", "set", ARCHS,
                  "the architectures to generate CUTLASS kernel variants for (sm_90a: the 3.x "
                  "TMA kernels; sm_80: the 2.x kernels, which also run on sm_90)",
                  choices=ARCHS, aliases={"sm_90": "sm_90a", "sm90": "sm_90a", "sm90a": "sm_90a",
                                          "sm80": "sm_80"},
                  key_aliases=("archs",)),
    CodegenOption("rms_eps", "float", 1e-5,
                  "epsilon of an rms_norm composite (call_tir of an rms_norm prim_func) whose "
                  "prim_func text does not show it in the standard form (... + T.float32(eps))",
                  above=0.0),
), backend="cutlass")

BACKEND = Backend(
    name="cutlass",
    table=lazy("byocc.backends.cutlass.patterns:registration_entries"),
    preferred_layout="NHWC",  # conv2d patterns take NHWC data and OHWI kernels
    rewrites=(lazy("byocc.backends.cutlass.rewrites:rewrite_attention"),),
    post_partition=(lazy("byocc.backends.cutlass.workspace:annotate_workspace"), AllocateWorkspace()),
    codegen=lazy("byocc.backends.cutlass.codegen:codegen"),
    options=OPTIONS,
    supports=lazy("byocc.backends.cutlass.codegen:supports"),
)

__all__ = ["ARCHS", "BACKEND", "OPTIONS"]
