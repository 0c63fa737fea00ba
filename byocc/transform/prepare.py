"""Preparing a module for a backend before partitioning (the CLI's ``--prepare``).

Models imported from ONNX are NCHW with batch normalisation and bias adds around every
convolution, while CUTLASS's conv2d patterns want NHWC data, OHWI kernels and a plain bias
add. :func:`prepare_for_backend` runs, in order:

1. FoldConstant -- what the model computes on weights alone;
2. FoldBatchNorm -- inference batch_norm folded into the convolution weights and bias;
3. ConvertLayout -- convolutions to ``layout`` (NHWC data, OHWI kernel), the layout
   carried through the element-wise ops, pools and concats around them;
4. FoldConstant -- transposes/reshapes of constants the layout change left;
5. DeadCodeElimination, then CanonicalizeBindings (no leftover aliases).

``layout=None`` skips step 3; a backend without layout preferences (``cublas``, user
patterns) gets only the folding and clean-up steps.
"""

from __future__ import annotations

from collections.abc import Sequence

from byocc.ir import IRModule, PassError

from .canonicalize_bindings import CanonicalizeBindings
from .convert_layout import ConvertLayout, is_plain_layout
from .dead_code_elimination import DeadCodeElimination
from .fold_batch_norm import FoldBatchNorm
from .fold_constant import FoldConstant
from .pass_manager import Pass, Sequential

# data layout -> kernel layout wanted by backends that take convolutions in that layout
_KERNEL_FOR = {"NHWC": "OHWI", "NCHW": "OIHW"}
LAYOUT_BACKENDS = frozenset(("cutlass",))


def prepare_passes(backend: str, layout: str | None = "NHWC", fold_batch_norm: bool = True) -> list[Pass]:
    """The pass list :func:`prepare_for_backend` runs for ``backend``."""
    passes: list[Pass] = [FoldConstant()]
    if fold_batch_norm:
        passes.append(FoldBatchNorm())
    if layout is not None and backend in LAYOUT_BACKENDS:
        if not is_plain_layout(layout) or layout not in _KERNEL_FOR:
            raise PassError(f"--prepare: unsupported layout {layout!r} (supported: {', '.join(sorted(_KERNEL_FOR))})")
        passes.append(ConvertLayout({"relax.nn.conv2d": [layout, _KERNEL_FOR[layout]]}))
        passes.append(FoldConstant())
    passes += [DeadCodeElimination(), CanonicalizeBindings()]
    return passes


def prepare_for_backend(mod: IRModule, backend: str | Sequence[str], layout: str | None = "NHWC",
                        fold_batch_norm: bool = True) -> IRModule:
    """``mod`` made ready for partitioning for ``backend`` (module docstring).

    ``backend`` may name several backends (the CLI's repeated ``--backend``); the layout
    step runs when any of them wants it.
    """
    names = [backend] if isinstance(backend, str) else list(backend)
    chosen = next((b for b in names if b in LAYOUT_BACKENDS), names[0] if names else "")
    return Sequential(prepare_passes(chosen, layout, fold_batch_norm), name="prepare")(mod)


__all__ = ["LAYOUT_BACKENDS", "prepare_for_backend", "prepare_passes"]
