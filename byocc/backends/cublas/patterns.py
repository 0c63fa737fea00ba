"""The cuBLAS pattern table: 10 entries and their check (docs/codegen.md#cublas-table).

:func:`registration_entries` lists them in TVM 0.27's registration order; the registry
reverses it, so ``get_patterns_with_prefix("cublas")`` starts with
``cublas.matmul_transposed_multiply`` and ends with ``cublas.matmul``.
"""

from __future__ import annotations

from byocc.dpl import ACCEPT
from byocc.dpl import CheckResult
from byocc.dpl import PatternCheckContext
from byocc.dpl import can_prove_equal
from byocc.dpl import fail
from byocc.dpl import product
from byocc.ir import Call
from byocc.ir import Op
from byocc.ir import TirVar

from ..patterns import make_matmul_dequantize_pattern
from ..patterns import make_matmul_multiply_pattern
from ..patterns import make_matmul_pattern
from ..utils import dtype_of
from ..utils import fmt_shape
from ..utils import is_static
from ..utils import itemsize
from ..utils import leak_reason
from ..utils import ndim_of
from ..utils import shape_of

_FP8 = "float8_e4m3fn"
_SAME_DTYPES = ("float16", "float32", "int8", "bfloat16")


def dtype_reason(lhs_dtype, rhs_dtype, out_dtype) -> str | None:
    """Why cuBLAS cannot take these dtypes, or None."""
    if lhs_dtype == _FP8 and rhs_dtype == _FP8:
        return None if out_dtype != "float8_e5m2" else "float8_e4m3fn inputs cannot give a float8_e5m2 output"
    if lhs_dtype == rhs_dtype and lhs_dtype in _SAME_DTYPES:
        return None
    if lhs_dtype != rhs_dtype:
        return f"lhs dtype {lhs_dtype} and rhs dtype {rhs_dtype} differ"
    return f"lhs dtype {lhs_dtype} not in {{float16, float32, int8, bfloat16, float8_e4m3fn}}"


def _zero_point_is_zero(zp) -> bool | None:
    data = getattr(zp, "data", None)
    if data is None:
        return None
    try:
        return float(data.reshape(()).item()) == 0.0
    except (ValueError, AttributeError):
        return None


def check_matmul(context: PatternCheckContext) -> CheckResult:
    """cuBLAS ``_check_matmul``: no leak; dequantize scale/zero point; dtypes; K static;
    int8 and fp8 alignment; bias must be a vector (and not with int8); batch rule."""
    reason = leak_reason(context)
    if reason:
        return fail(reason)
    annotated = context.annotated_expr
    lhs, rhs, matmul = annotated["lhs"], annotated["rhs"], annotated["root"]

    if "scale" in annotated and "zp" in annotated:
        scale, zp = annotated["scale"], annotated["zp"]
        if ndim_of(scale) != 0 or ndim_of(zp) != 0:
            return fail("dequantize scale and zero point must be scalars")
        is_zero = _zero_point_is_zero(zp)
        if is_zero is None:
            return fail("the dequantize zero point value is unknown")
        if not is_zero:
            return fail("dequantize zero point is not 0")

    lhs_dtype, rhs_dtype, out_dtype = dtype_of(lhs), dtype_of(rhs), dtype_of(matmul)
    reason = dtype_reason(lhs_dtype, rhs_dtype, out_dtype)
    if reason:
        return fail(reason)

    lhs_shape, rhs_shape = shape_of(lhs), shape_of(rhs)
    if not lhs_shape or not rhs_shape:
        return fail("an operand shape is unknown")
    k = lhs_shape[-1]
    if not is_static(k):
        return fail(f"reduction dim K={getattr(k, 'name', k)} of lhs is not a constant")

    if lhs_dtype == "int8" and rhs_dtype == "int8":
        if k % 4 != 0:
            return fail(f"int8 matmul needs K % 4 == 0, K is {k}")
        if not is_static(rhs_shape[-1]) or rhs_shape[-1] % 4 != 0:
            return fail(f"int8 matmul needs the rhs last dim to be a multiple of 4, it is {rhs_shape[-1]}")
    elif lhs_dtype == _FP8 and rhs_dtype == _FP8:
        rhs_arg = matmul.args[1] if isinstance(matmul, Call) and len(matmul.args) > 1 else None
        transposed = False
        if rhs_arg is not None and rhs_arg in context.matched_bindings:
            value = context.matched_bindings[rhs_arg]
            transposed = (isinstance(value, Call) and isinstance(value.op, Op)
                          and value.op.name == "relax.permute_dims")
        if not transposed:
            return fail("fp8 matmul needs the rhs transposed inside the match")
        if not is_static(rhs_shape[-1]) or rhs_shape[-1] % (16 // itemsize(lhs_dtype)) != 0:
            return fail(f"fp8 matmul needs rhs last dim aligned to 16 bytes, it is {rhs_shape[-1]}")
        if len(rhs_shape) < 2 or not is_static(rhs_shape[-2]) or rhs_shape[-2] % (16 // itemsize(out_dtype or "int8")) != 0:
            return fail("fp8 matmul needs rhs second-to-last dim aligned to 16 output bytes")

    lhs_batches = product(lhs_shape[:-2])
    rhs_batches = product(rhs_shape[:-2])

    if "bias" in annotated:
        if lhs_dtype == "int8" and rhs_dtype == "int8":
            return fail("int8 matmul cannot take a bias epilogue")
        bias_shape = shape_of(annotated["bias"])
        if bias_shape is None:
            return fail("the bias shape is unknown")
        bias_batches = product(bias_shape[:-1])
        if not is_static(bias_batches) or bias_batches > 1:
            return fail(f"bias shape {fmt_shape(bias_shape)} is not a vector")

    if isinstance(lhs_batches, TirVar) or isinstance(rhs_batches, TirVar):
        return ACCEPT
    if can_prove_equal(lhs_batches, rhs_batches):
        return ACCEPT
    if is_static(lhs_batches) and lhs_batches >= 1 and is_static(rhs_batches) and rhs_batches == 1:
        return ACCEPT
    return fail(f"batch dims {fmt_shape(lhs_shape[:-2])} and {fmt_shape(rhs_shape[:-2])}: cuBLAS needs "
                "equal batch counts or an unbatched rhs")


def registration_entries() -> list:
    """The 10 entries in registration order (lowest priority first)."""
    entries = []
    for transposed in (False, True):
        stem = "cublas.matmul_transposed" if transposed else "cublas.matmul"
        for suffix, with_bias, activation in (("", False, None), ("_bias", True, None),
                                              ("_bias_relu", True, "relax.nn.relu"),
                                              ("_bias_gelu", True, "relax.nn.gelu")):
            entries.append((stem + suffix, *make_matmul_pattern(with_bias=with_bias, activation=activation,
                                                                transposed_rhs=transposed), check_matmul))
    entries.append(("cublas.matmul_transposed_dequantize", *make_matmul_dequantize_pattern(transposed_rhs=True),
                    check_matmul))
    entries.append(("cublas.matmul_transposed_multiply", *make_matmul_multiply_pattern(transposed_rhs=True),
                    check_matmul))
    return entries


__all__ = ["check_matmul", "dtype_reason", "registration_entries"]
