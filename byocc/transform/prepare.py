"""Preparing a module before partitioning: the layout and folding steps of the CLI's
``--prepare``, and the pass that runs a backend's rewrites of every function.

Models imported from ONNX are NCHW with batch normalisation and bias adds around every
convolution, while some backends' conv2d patterns want NHWC data, OHWI kernels and a plain
bias add. :func:`preparation_passes` lists, in order:

1. FoldConstant -- what the model computes on weights alone;
2. FoldBatchNorm -- inference batch_norm folded into the convolution weights and bias;
3. ConvertLayout -- convolutions to ``layout`` (NHWC data, OHWI kernel), the layout
   carried through the element-wise ops, pools and concats around them;
4. FoldConstant -- transposes/reshapes of constants the layout change left;
5. DeadCodeElimination, then CanonicalizeBindings (no leftover aliases).

``layout=None`` skips steps 3-4. Which layout a backend wants is the backend's business
(its record's ``preferred_layout``, :func:`byocc.backends.prepare_for_backend`); this
module takes the layout as a parameter and knows no backend.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from typing import ClassVar

from byocc.ir import Function
from byocc.ir import IRModule
from byocc.ir import PassError

from .canonicalize_bindings import CanonicalizeBindings
from .convert_layout import ConvertLayout
from .convert_layout import is_plain_layout
from .dead_code_elimination import DeadCodeElimination
from .fold_batch_norm import FoldBatchNorm
from .fold_constant import FoldConstant
from .pass_manager import Pass
from .pass_manager import Sequential
from .pass_manager import map_functions

# data layout -> the kernel layout that goes with it
_KERNEL_FOR = {"NHWC": "OHWI", "NCHW": "OIHW"}


def preparation_passes(layout: str | None = "NHWC", fold_batch_norm: bool = True) -> list[Pass]:
    """The passes that prepare a module: folding, convolutions to ``layout`` (None: kept),
    clean-up (module docstring)."""
    passes: list[Pass] = [FoldConstant()]
    if fold_batch_norm:
        passes.append(FoldBatchNorm())
    if layout is not None:
        if not is_plain_layout(layout) or layout not in _KERNEL_FOR:
            raise PassError(f"--prepare: unsupported layout {layout!r} (supported: {', '.join(sorted(_KERNEL_FOR))})")
        passes.append(ConvertLayout({"relax.nn.conv2d": [layout, _KERNEL_FOR[layout]]}))
        passes.append(FoldConstant())
    passes += [DeadCodeElimination(), CanonicalizeBindings()]
    return passes


def prepare_module(mod: IRModule, layout: str | None = "NHWC", fold_batch_norm: bool = True) -> IRModule:
    """``mod`` after :func:`preparation_passes`, run as one ``Sequential`` named ``prepare``."""
    return Sequential(preparation_passes(layout, fold_batch_norm), name="prepare")(mod)


def rewrite_functions(mod: IRModule, rewrites: Sequence[Callable[..., Function]],
                      **options: Any) -> IRModule:
    """``mod`` with every Relax function passed through ``rewrites`` in order, each called
    as ``rewrite(func, **options)``; the same module when nothing changed."""
    if not rewrites:
        return mod

    def chain(func: Function) -> Function:
        for rewrite in rewrites:
            func = rewrite(func, **options)
        return func

    return map_functions(mod, chain)


@dataclass(frozen=True)
class RewriteFunctions(Pass):
    """:func:`rewrite_functions` as a pass (a backend's rewrites before fusion, given by the
    caller, e.g. ``byocc partition --backend-steps``)."""

    name: ClassVar[str] = "RewriteFunctions"
    rewrites: tuple[Callable[..., Function], ...] = ()

    def run(self, mod: IRModule) -> IRModule:
        return rewrite_functions(mod, self.rewrites)


__all__ = ["RewriteFunctions", "prepare_module", "preparation_passes", "rewrite_functions"]
