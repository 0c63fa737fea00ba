"""Attention workloads: ``get_relax_attention_module`` and
``get_relax_stacked_attention_module`` (the modules CUTLASS's attention patterns match)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from byocc.ir import InputError
from byocc.ir import IRModule
from byocc.ir import TupleGetItem
from byocc.relax import op as relax_op
from byocc.relax.struct_info import TensorStructInfo
from byocc.script.ir_builder import IRBuilder
from byocc.script.ir_builder import relax as rb


def get_relax_attention_module(
    q_shape: Sequence[Any], k_shape: Sequence[Any], v_shape: Sequence[Any], *, dtype: str,
    bias_shape: Sequence[Any] | str | None = None, qk_scale: float | None = None,
    causal_mask: str | None = None, window_size: int | None = None,
) -> IRModule:
    """``main(q, k, v[, bias])`` returning ``R.nn.attention(q, k, v, bias, scale,
    causal_mask, window_size)``; ``bias_shape`` None or ``"none"`` means no bias."""
    with IRBuilder() as builder:
        with rb.function():
            rb.func_name("main")
            q = rb.arg("q", TensorStructInfo(q_shape, dtype))
            k = rb.arg("k", TensorStructInfo(k_shape, dtype))
            v = rb.arg("v", TensorStructInfo(v_shape, dtype))
            has_bias = bias_shape is not None and bias_shape != "none"
            bias = rb.arg("bias", TensorStructInfo(bias_shape, dtype)) if has_bias else None
            with rb.dataflow() as block:
                scale = None if qk_scale is None else float(qk_scale)
                out = rb.emit(relax_op.nn.attention(q, k, v, bias, scale, causal_mask, window_size))
                rb.output(out)
            rb.func_ret_value(block.output_vars[0])
    return IRModule({"main": builder.get()})


_SPLIT_AXIS = {"BS3NH": 2, "SBN3H": 3}


def get_relax_stacked_attention_module(
    qkv: Any, b: int, s: int, n: int, h: int, h_v: int, op: str, bias: Any = None,
    qk_scale: float | None = None, single_shape: bool = False, layout: str = "BS3NH",
    causal_mask: str | None = None,
) -> IRModule:
    """``main(qkv[, bias])``: Q, K and V cut out of the stacked ``qkv`` (an array: its
    ``shape`` and ``dtype`` are used) by ``op`` (``"split"`` or ``"strided_slice"``) on
    the stacking axis, brought to BSNH (reshape for ``BS3NH``, a transpose for
    ``SBN3H``), then ``R.nn.attention``."""
    if layout not in _SPLIT_AXIS:
        raise InputError(f"get_relax_stacked_attention_module: layout must be BS3NH or SBN3H, got {layout!r}")
    if op not in ("split", "strided_slice"):
        raise InputError(f"get_relax_stacked_attention_module: op must be 'split' or 'strided_slice', "
                         f"got {op!r}")
    dtype = str(qkv.dtype)
    axis = _SPLIT_AXIS[layout]
    first, second = (n * h, 2 * n * h) if layout == "BS3NH" else (h, 2 * h)
    qk_shape = [b, s, n, h]
    v_shape = qk_shape if single_shape else [b, s, n, h_v]
    with IRBuilder() as builder:
        with rb.function():
            rb.func_name("main")
            stacked = rb.arg("qkv", TensorStructInfo(list(qkv.shape), dtype))
            bias_var = None if bias is None else rb.arg("bias", TensorStructInfo(list(bias.shape), dtype))
            with rb.dataflow() as block:
                if op == "split":
                    parts = relax_op.split(stacked, [first, second], axis=axis)
                    fields = parts.struct_info.fields
                    q, k, v = (TupleGetItem(parts, i, fields[i]) for i in range(3))
                else:
                    end = int(qkv.shape[axis])
                    q, k, v = (relax_op.strided_slice(stacked, [axis], [lo], [hi], [1])
                               for lo, hi in ((0, first), (first, second), (second, end)))
                if layout == "BS3NH":
                    q, k, v = relax_op.reshape(q, qk_shape), relax_op.reshape(k, qk_shape), relax_op.reshape(v, v_shape)
                else:
                    q, k, v = (relax_op.permute_dims(t, [1, 0, 2, 3]) for t in (q, k, v))
                scale = None if qk_scale is None else float(qk_scale)
                out = rb.emit(relax_op.nn.attention(q, k, v, bias_var, scale, causal_mask))
                if layout == "SBN3H":
                    out = rb.emit(relax_op.permute_dims(out, [1, 0, 2, 3]))
                rb.output(out)
            rb.func_ret_value(block.output_vars[0])
    return IRModule({"main": builder.get()})


__all__ = ["get_relax_attention_module", "get_relax_stacked_attention_module"]
