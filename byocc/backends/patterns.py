"""Pattern helpers shared by backends and pattern files (TVM's ``relax/backend/patterns.py``
signatures). Each returns ``(pattern, annotations)``: ``annotations`` maps a key (``lhs``,
``rhs``, ``root``, ``bias``, ``residual``...) to the sub-pattern whose match a check function
or codegen wants to see. Every call builds fresh pattern objects.
"""

from __future__ import annotations

from byocc.dpl import DFPattern
from byocc.dpl import GlobalVarPattern
from byocc.dpl import TuplePattern
from byocc.dpl import append_bias_activation
from byocc.dpl import is_const
from byocc.dpl import is_op
from byocc.dpl import is_tuple_get_item
from byocc.dpl import make_fused_bias_activation_pattern as dpl_fused_bias_activation
from byocc.dpl import wildcard
from byocc.ir import PatternError

PatternAndAnnotations = tuple  # (DFPattern, dict[str, DFPattern])


def make_fused_bias_activation_pattern(op_name: str, with_bias: bool = False,
                                       activation: str | None = None,
                                       allow_reshape: bool = False) -> PatternAndAnnotations:
    """TVM's backend spelling of :func:`byocc.dpl.make_fused_bias_activation_pattern`:
    the same pattern, as a ``(pattern, annotations)`` tuple (lhs, rhs, root[, bias])."""
    pattern = dpl_fused_bias_activation(op_name, with_bias, activation, allow_reshape)
    return pattern, pattern.annotations


def make_residual_block_pattern(node_output: DFPattern | tuple, binary_op: str = "relax.add",
                                activation: str | None = None) -> PatternAndAnnotations:
    """``binary_op(node_output, residual) | binary_op(residual, node_output)`` [``activation``];
    the annotations of ``node_output`` (when given as a pair) plus ``residual``."""
    if isinstance(node_output, tuple):
        if len(node_output) != 2:
            raise PatternError("make_residual_block_pattern takes a pattern or a (pattern, annotations) pair")
        node_output, arg_patterns = node_output
    else:
        arg_patterns = {}
    residual_input = wildcard()
    op = is_op(binary_op)
    output = op(node_output, residual_input) | op(residual_input, node_output)
    if activation is not None:
        output = is_op(activation)(output)
    return output, {**arg_patterns, "residual": residual_input}


def make_conv2d_pattern(with_bias: bool = False, activation: str | None = None) -> PatternAndAnnotations:
    """``relax.nn.conv2d(input, weight)`` [``+ bias``] [``activation``]; annotations input,
    weight, root[, bias]."""
    input_tensor, kernel = wildcard(), wildcard()
    annotations = {"input": input_tensor, "weight": kernel}
    conv2d = is_op("relax.nn.conv2d")(input_tensor, kernel)
    annotations["root"] = conv2d
    return append_bias_activation(conv2d, annotations, with_bias, activation), annotations


def make_matmul_pattern(with_bias: bool = False, activation: str | None = None,
                        transposed_rhs: bool = False) -> PatternAndAnnotations:
    """``relax.matmul(lhs, rhs | permute_dims(rhs))`` [``+ bias``] [``activation``];
    annotations lhs, rhs (before the permute), root[, bias]."""
    out, annotations = _matmul(transposed_rhs)
    return append_bias_activation(out, annotations, with_bias, activation), annotations


def _matmul(transposed_rhs: bool, *extra: str) -> tuple[DFPattern, dict]:
    """``relax.matmul(lhs, rhs | permute_dims(rhs))`` and its annotations lhs, rhs (before
    the permute), root, then one wildcard per name in ``extra``."""
    lhs, rhs = wildcard(), wildcard()
    annotations = {"lhs": lhs, "rhs": rhs, **{name: wildcard() for name in extra}}
    if transposed_rhs:
        rhs = is_op("relax.permute_dims")(rhs)
    annotations["root"] = out = is_op("relax.matmul")(lhs, rhs)
    return out, annotations


def make_attention_pattern(with_bias: bool = False, var_len: bool = False) -> PatternAndAnnotations:
    """``R.nn.attention(q, k, v)``, ``attention_bias(q, k, v, bias)`` or
    ``attention_var_len(q, k, v, seqstart_q, seqstart_k, max_seqlen_q, max_seqlen_k)``."""
    query, key, value = wildcard(), wildcard(), wildcard()
    annotations = {"query": query, "key": key, "value": value}
    if with_bias:
        bias = wildcard()
        annotations["bias"] = bias
        out = is_op("relax.nn.attention_bias")(query, key, value, bias)
    elif var_len:
        extra = {name: wildcard() for name in ("seqstart_q", "seqstart_k", "max_seqlen_q", "max_seqlen_k")}
        annotations.update(extra)
        out = is_op("relax.nn.attention_var_len")(query, key, value, *extra.values())
    else:
        out = is_op("relax.nn.attention")(query, key, value)
    return out, annotations


def make_stacked_attention_pattern(start_op: str, with_bias: bool = False,
                                   layout: str = "BS3NH") -> PatternAndAnnotations:
    """Attention on q, k, v cut out of one stacked tensor by ``split`` or three
    ``strided_slice`` calls, then reshaped (BS3NH) or transposed (SBN3H)."""
    stacked_qkv = wildcard()
    ops: dict = {}
    if start_op == "split":
        ops["split"] = qkv_tuple = is_op("relax.split")(stacked_qkv)
        query_raw = is_tuple_get_item(qkv_tuple, 0)
        key_raw = is_tuple_get_item(qkv_tuple, 1)
        value_raw = is_tuple_get_item(qkv_tuple, 2)
    elif start_op == "strided_slice":
        slice_op = "relax.strided_slice"
        ops["strided_slice_query"] = query_raw = is_op(slice_op)(stacked_qkv, varg_default_wildcard=True)
        ops["strided_slice_key"] = key_raw = is_op(slice_op)(stacked_qkv, varg_default_wildcard=True)
        ops["strided_slice_value"] = value_raw = is_op(slice_op)(stacked_qkv, varg_default_wildcard=True)
    else:
        raise PatternError(f"make_stacked_attention_pattern: unknown start_op {start_op!r}")
    query_reshape_list, key_reshape_list, value_reshape_list = wildcard(), wildcard(), wildcard()
    if layout == "BS3NH":
        query = is_op("relax.reshape")(query_raw, query_reshape_list)
        key = is_op("relax.reshape")(key_raw, key_reshape_list)
        value = is_op("relax.reshape")(value_raw, value_reshape_list)
    elif layout == "SBN3H":
        ops["q_transpose"] = query = is_op("relax.permute_dims")(query_raw)
        ops["k_transpose"] = key = is_op("relax.permute_dims")(key_raw)
        ops["v_transpose"] = value = is_op("relax.permute_dims")(value_raw)
    else:
        raise PatternError(f"make_stacked_attention_pattern: unknown layout {layout!r}")
    annotations = {
        "stacked_qkv": stacked_qkv,
        "query_reshape_list": query_reshape_list,
        "key_reshape_list": key_reshape_list,
        "value_reshape_list": value_reshape_list,
        **ops,
    }
    if with_bias:
        bias = wildcard()
        annotations["bias"] = bias
        out = is_op("relax.nn.attention_bias")(query, key, value, bias)
    else:
        out = is_op("relax.nn.attention")(query, key, value)
    if layout == "SBN3H":
        out = is_op("relax.permute_dims")(out)
    return out, annotations


def make_layer_norm_pattern() -> PatternAndAnnotations:
    """``R.nn.layer_norm(x, gamma, beta)``; no annotations."""
    return is_op("relax.nn.layer_norm")(wildcard(), wildcard(), wildcard()), {}


def make_rms_norm_pattern() -> PatternAndAnnotations:
    """``R.call_tir(cls.<gv>, (inp, weight))``; annotations gv, inp, rms_norm."""
    inp, weight = wildcard(), wildcard()
    gv = GlobalVarPattern()
    out = is_op("relax.call_tir")(gv, TuplePattern([inp, weight]))
    return out, {"gv": gv, "inp": inp, "rms_norm": out}


def make_matmul_dequantize_pattern(transposed_rhs: bool = False) -> PatternAndAnnotations:
    """``R.dequantize(matmul(lhs, rhs), scale=const, zp=const)``; + scale, zp."""
    out, annotations = _matmul(transposed_rhs)
    scale, zp = is_const(), is_const()
    annotations.update({"scale": scale, "zp": zp})
    out = is_op("relax.dequantize")(out, scale, zp)
    return out, annotations


def make_matmul_multiply_pattern(transposed_rhs: bool = False) -> PatternAndAnnotations:
    """``astype(matmul(lhs, rhs) * (scaleA * scaleB))`` with (1,)-shaped scales."""
    out, annotations = _matmul(transposed_rhs, "scaleA", "scaleB")
    scale = is_op("relax.multiply")(annotations["scaleA"].has_shape((1,)), annotations["scaleB"].has_shape((1,)))
    out = is_op("relax.multiply")(out, scale)
    out = is_op("relax.astype")(out)
    return out, annotations


__all__ = [
    "make_attention_pattern", "make_conv2d_pattern", "make_fused_bias_activation_pattern",
    "make_layer_norm_pattern", "make_matmul_dequantize_pattern", "make_matmul_multiply_pattern",
    "make_matmul_pattern", "make_residual_block_pattern", "make_rms_norm_pattern",
    "make_stacked_attention_pattern",
]
