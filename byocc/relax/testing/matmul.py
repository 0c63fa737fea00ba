"""``get_relax_matmul_module``: ``main(x, y[, bias])`` computing a matmul and its epilogue."""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Sequence
from typing import Any

from byocc.ir import IRModule
from byocc.relax import op
from byocc.relax.struct_info import TensorStructInfo
from byocc.script.ir_builder import IRBuilder
from byocc.script.ir_builder import relax as rb


def get_relax_matmul_module(
    x_shape: Sequence[Any],
    y_shape: Sequence[Any],
    in_dtype: str,
    out_dtype: str | None = None,
    transposed_y: bool = False,
    bias_shape: Sequence[Any] | None = None,
    activation: Callable | None = None,
    residual_bin_op: Callable | None = None,
    residual_activation: Callable | None = None,
) -> IRModule:
    """One dataflow block: ``y`` transposed on its last two axes when ``transposed_y``;
    ``matmul(x, y, out_dtype)``; ``+ bias`` (a parameter of ``bias_shape`` in
    ``out_dtype``); ``activation(.)``; ``residual_bin_op(., x)``; ``residual_activation(.)``.
    Each step is optional; ``out_dtype`` defaults to ``in_dtype``."""
    out_dtype = in_dtype if out_dtype is None else out_dtype
    with IRBuilder() as builder:
        with rb.function():
            rb.func_name("main")
            x = rb.arg("x", TensorStructInfo(x_shape, in_dtype))
            y = rb.arg("y", TensorStructInfo(y_shape, in_dtype))
            bias = None if bias_shape is None else rb.arg("bias", TensorStructInfo(bias_shape, out_dtype))
            with rb.dataflow() as block:
                if transposed_y:
                    rank = len(y_shape)
                    y = rb.emit(op.permute_dims(y, axes=[*range(rank - 2), -1, -2]))
                out = rb.emit(op.matmul(x, y, out_dtype=out_dtype))
                if bias is not None:
                    out = rb.emit(op.add(out, bias))
                if activation is not None:
                    out = rb.emit(activation(out))
                if residual_bin_op is not None:
                    out = rb.emit(residual_bin_op(out, x))
                    if residual_activation is not None:
                        out = rb.emit(residual_activation(out))
                rb.output(out)
            rb.func_ret_value(block.output_vars[0])
    return IRModule({"main": builder.get()})


__all__ = ["get_relax_matmul_module"]
