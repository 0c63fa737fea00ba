"""Floating-point operations of matrix multiplications and convolutions, from struct info.

A multiply-add counts two. ``matmul``: ``2 * numel(out) * K``; a convolution:
``2 * numel(out) * numel(weight) / O`` (each output element reads ``C_in / groups`` times
the kernel window, whatever the layout); a transposed convolution:
``2 * numel(data) * numel(weight) / I``. Unknown (symbolic or missing) shapes give None.
"""

from __future__ import annotations

from byocc.ir import Call
from byocc.ir import TensorStructInfo

_CONV = frozenset(("relax.nn.conv1d", "relax.nn.conv2d", "relax.nn.conv3d"))
_CONV_T = frozenset(("relax.nn.conv1d_transpose", "relax.nn.conv2d_transpose"))
FLOP_OPS = frozenset({"relax.matmul"} | _CONV | _CONV_T)
"""The operators whose FLOPs the report counts."""


def _static(sinfo) -> tuple[int, ...] | None:
    if not isinstance(sinfo, TensorStructInfo) or sinfo.shape is None:
        return None
    dims = tuple(sinfo.shape)
    return dims if all(isinstance(d, int) for d in dims) else None


def _numel(dims: tuple[int, ...]) -> int:
    n = 1
    for d in dims:
        n *= d
    return n


def call_flops(call: Call) -> int | None:
    """FLOPs of one call of :data:`FLOP_OPS` (None for other operators or unknown shapes)."""
    op = getattr(call.op, "name", None)
    if op not in FLOP_OPS or len(call.args) < 2:
        return None
    lhs = _static(getattr(call.args[0], "struct_info", None))
    rhs = _static(getattr(call.args[1], "struct_info", None))
    out = _static(call.struct_info)
    if lhs is None or rhs is None or out is None or not lhs or not rhs:
        return None
    if op == "relax.matmul":
        return 2 * _numel(out) * lhs[-1]
    layout = (call.attrs.get("kernel_layout") if call.attrs is not None else None) or (
        "IOHW" if op in _CONV_T else "OIHW")
    axis = "I" if op in _CONV_T else "O"
    if axis not in layout or len(layout) != len(rhs) or rhs[layout.index(axis)] == 0:
        return None
    per = _numel(rhs) // rhs[layout.index(axis)]
    return 2 * (_numel(lhs) if op in _CONV_T else _numel(out)) * per


def format_flops(n: float) -> str:
    """``12.3 GFLOP``-style text."""
    for unit, scale in (("TFLOP", 1e12), ("GFLOP", 1e9), ("MFLOP", 1e6), ("kFLOP", 1e3)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{int(n)} FLOP"


__all__ = ["FLOP_OPS", "call_flops", "format_flops"]
