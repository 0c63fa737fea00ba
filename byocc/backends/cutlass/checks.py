"""Check functions of the CUTLASS pattern table (docs/codegen.md#cutlass-checks).

Each returns a :class:`~byocc.dpl.CheckResult`: falsy when the match is rejected, with the
first rule that failed as ``.reason``. Rules and their order are TVM 0.27's
(``python/tvm/relax/backend/cuda/cutlass.py``).
"""

from __future__ import annotations

from byocc.dpl import ACCEPT
from byocc.dpl import CheckResult
from byocc.dpl import PatternCheckContext
from byocc.dpl import fail
from byocc.ir import Call
from byocc.ir import ExternFunc
from byocc.ir import GlobalVar
from byocc.ir import PatternError
from byocc.ir import TirVar

from ..utils import check_residual
from ..utils import dtype_of
from ..utils import fmt_shape
from ..utils import int_list
from ..utils import is_bias_like
from ..utils import is_same_shape
from ..utils import is_shape_valid_for_cutlass_matmul
from ..utils import leak_reason
from ..utils import ndim_of
from ..utils import shape_of
from ..utils import tvm_dim_eq

_INT8 = ("int8", "uint8")


def dtype_reason(lhs_dtype: str | None, rhs_dtype: str | None) -> str | None:
    """Why CUTLASS cannot take these operand dtypes (both f16, both f32, or both in
    {int8, uint8}), or None."""
    if (lhs_dtype == rhs_dtype and lhs_dtype in ("float16", "float32")) or (
            lhs_dtype in _INT8 and rhs_dtype in _INT8):
        return None
    supported = {"float16", "float32", "int8", "uint8"}
    if lhs_dtype not in supported:
        return f"lhs dtype {lhs_dtype} not in {{float16, float32, int8, uint8}}"
    if rhs_dtype not in supported:
        return f"rhs dtype {rhs_dtype} not in {{float16, float32, int8, uint8}}"
    return f"lhs dtype {lhs_dtype} and rhs dtype {rhs_dtype} do not form a supported pair"


def check_matmul(context: PatternCheckContext) -> CheckResult:
    """``_check_matmul``: no leak; dtypes; residual rule; batch rule on lhs/rhs."""
    reason = leak_reason(context)
    if reason:
        return fail(reason)
    annotated = context.annotated_expr
    lhs, rhs = annotated["lhs"], annotated["rhs"]
    reason = dtype_reason(dtype_of(lhs), dtype_of(rhs))
    if reason:
        return fail(reason)
    result = check_residual(annotated["root"], context)
    if not result:
        return result
    lhs_shape, rhs_shape = shape_of(lhs), shape_of(rhs)
    if lhs_shape is None or rhs_shape is None:
        return fail("an operand shape is unknown")
    return is_shape_valid_for_cutlass_matmul(lhs_shape, rhs_shape)


def check_conv2d(context: PatternCheckContext) -> CheckResult:
    """``_check_conv2d``: no leak; NHWC/OHWI; dtypes; residual; static data dims
    (no bare symbolic dim); not depthwise (IC == OC == groups)."""
    reason = leak_reason(context)
    if reason:
        return fail(reason)
    conv = context.annotated_expr["root"]
    attrs = conv.attrs
    data_layout = attrs.get("data_layout") if attrs is not None else None
    kernel_layout = attrs.get("kernel_layout") if attrs is not None else None
    data, weight = conv.args[0], conv.args[1]
    if data_layout != "NHWC":
        return fail(f"data_layout {data_layout} != NHWC")
    if kernel_layout != "OHWI":
        return fail(f"kernel_layout {kernel_layout} != OHWI")
    reason = dtype_reason(dtype_of(data), dtype_of(weight))
    if reason:
        return fail(reason.replace("lhs", "data").replace("rhs", "weight"))
    result = check_residual(conv, context)
    if not result:
        return result
    data_shape, weight_shape = shape_of(data), shape_of(weight)
    if data_shape is None or weight_shape is None or len(data_shape) < 4 or not weight_shape:
        return fail("the data or weight shape is unknown")
    for dim in data_shape:
        if isinstance(dim, TirVar):
            return fail(f"data shape {fmt_shape(data_shape)} has a symbolic dim {dim.name}")
    ic, oc = data_shape[3], weight_shape[0]
    groups = attrs.get("groups")
    if tvm_dim_eq(ic, oc) and tvm_dim_eq(oc, groups):
        return fail(f"depthwise conv2d (IC == OC == groups == {groups}) is not supported")
    return ACCEPT


def check_decode_matmul(context: PatternCheckContext) -> CheckResult:
    """``_check_decode_matmul`` (deferred family, docs/codegen.md#cutlass-checks)."""
    reason = leak_reason(context)
    if reason:
        return fail(reason)
    annotated = context.annotated_expr
    root = annotated["root"]
    result = check_residual(root, context)
    if not result:
        return result
    if dtype_of(root) == "float32":
        return fail("float32 output is not supported (only with a cast to float16)")
    decode = annotated["w_decoded"]
    callee = decode.args[0] if isinstance(decode, Call) and decode.args else None
    if not isinstance(callee, GlobalVar) or "decode" not in callee.name_hint:
        return fail("the weight is not produced by a function whose name contains 'decode'")
    out_shape = shape_of(root)
    if not out_shape:
        return fail("the output shape is unknown")
    n = out_shape[-1]
    if dtype_of(annotated["lhs"]) != "float16":
        return fail(f"lhs dtype {dtype_of(annotated['lhs'])} != float16")
    packed = annotated["w_encoded"]
    if dtype_of(packed) != "int8":
        return fail(f"encoded weight dtype {dtype_of(packed)} != int8")
    if (isinstance(packed, Call) and packed.args and isinstance(packed.args[0], ExternFunc)
            and packed.args[0].global_symbol != "cutlass.ft_preprocess_weight"):
        return fail("the encoded weight is not preprocessed by cutlass.ft_preprocess_weight")
    scales = annotated["scales"]
    if dtype_of(scales) != "float16":
        return fail(f"scales dtype {dtype_of(scales)} != float16")
    scales_shape = shape_of(scales)
    if scales_shape is None or len(scales_shape) > 2 or not scales_shape or not tvm_dim_eq(scales_shape[-1], n):
        return fail(f"scales shape {fmt_shape(scales_shape or ())} is not (N,), (1, N) or (K/group, N)")
    if "bias" in annotated:
        bias_shape = shape_of(annotated["bias"])
        if bias_shape is None or (not is_bias_like(bias_shape, n) and not is_same_shape(out_shape, bias_shape)):
            return fail("the bias is neither bias-like nor output-shaped")
    return ACCEPT


def check_stacked_attention(context: PatternCheckContext) -> CheckResult:
    """``_check_stacked_attention``: no leak; stacked qkv rank 3; split on axis 2, or three
    contiguous unit-stride strided slices on axis 2."""
    reason = leak_reason(context)
    if reason:
        return fail(reason)
    annotated = context.annotated_expr
    if ndim_of(annotated["stacked_qkv"]) != 3:
        return fail(f"stacked qkv has rank {ndim_of(annotated['stacked_qkv'])}, not 3")
    if "split" in annotated:
        axis = annotated["split"].attrs.get("axis")
        if axis != 2:
            return fail(f"split axis {axis} != 2")
        return ACCEPT
    last_end = 0
    for name in ("query", "key", "value"):
        op = annotated[f"strided_slice_{name}"]
        if len(op.args) < 5:
            # TVM 0.27 indexes args[4] unconditionally: its check raises IndexError here.
            raise PatternError("cutlass.stacked_attention: R.strided_slice without strides "
                               "(TVM 0.27's check function fails with IndexError on this input)")
        try:
            axes, begins, ends, strides = (int_list(op.args[i]) for i in (1, 2, 3, 4))
        except ValueError as exc:
            raise PatternError(f"cutlass.stacked_attention: {exc} (TVM 0.27's check function "
                               "fails on this input)") from None
        if axes != [2]:
            return fail(f"strided_slice_{name} axes {axes} != [2]")
        if begins != [last_end]:
            return fail(f"strided_slice_{name} begin {begins} != [{last_end}]")
        if len(ends) != 1:
            return fail(f"strided_slice_{name} has {len(ends)} ends, not 1")
        if strides != [1]:
            return fail(f"strided_slice_{name} strides {strides} != [1]")
        last_end = ends[0]
    return ACCEPT


def check_layer_norm(context: PatternCheckContext) -> CheckResult:
    """``_check_layer_norm``: center and scale; exactly one axis, the last one."""
    call = context.matched_expr
    attrs = call.attrs
    if not attrs.get("center") or not attrs.get("scale"):
        return fail("layer_norm without center or scale is not supported")
    axes = attrs.get("axes") or ()
    if len(axes) != 1:
        return fail(f"layer_norm over axes {list(axes)}: only one axis is supported")
    axis = int(axes[0])
    rank = ndim_of(call)
    if rank < 0:
        return fail("the layer_norm rank is unknown")
    if axis < 0:
        axis += rank
    if axis != rank - 1:
        return fail(f"layer_norm axis {axis} is not the last axis {rank - 1}")
    return ACCEPT


def check_rms_norm(context: PatternCheckContext) -> CheckResult:
    """``_check_rms_norm``: the called function's name contains ``rms_norm``."""
    call = context.annotated_expr["rms_norm"]
    callee = call.args[0] if call.args else None
    name = getattr(callee, "name_hint", "")
    if "rms_norm" not in name:
        return fail(f"callee {name or '?'} does not contain 'rms_norm'")
    return ACCEPT


__all__ = [
    "check_conv2d", "check_decode_matmul", "check_layer_norm", "check_matmul", "check_rms_norm",
    "check_stacked_attention", "dtype_reason",
]
