"""The registry and the cutlass/cublas tables: sizes, priority order, graph shapes
(spec/backends.md sections 3-4, spec/partitioning.md section 4)."""

from __future__ import annotations

import subprocess
import sys

from byocc.backends import FusionPattern
from byocc.backends import get_pattern
from byocc.backends import get_patterns_with_prefix
from byocc.backends import make_matmul_pattern
from byocc.backends import register_patterns
from byocc.backends import remove_patterns
from byocc.backends.cutlass.checks import check_conv2d
from byocc.backends.cutlass.checks import check_matmul

CUTLASS_ORDER = (
    ["rms_norm", "layer_norm", "attention_var_len"]
    + ["stacked_attention"] * 4
    + ["attention_bias", "attention"]
    + [f"decode_matmul{c}_bias{g}_residual_{b}_relu" for c, g in (("_cast", "_gelu"), ("", "_gelu"), ("_cast", ""), ("", ""))
       for b in ("multiply", "add")]
    + [f"matmul_transposed_bias{a}_residual_{b}_relu" for a in ("_gelu", "_relu", "") for b in ("multiply", "add")]
    + [f"matmul_bias{a}_residual_{b}_relu" for a in ("_gelu", "_relu", "") for b in ("multiply", "add")]
    + [f"conv2d_bias{a}_residual_{b}_relu" for a in ("_silu", "_relu", "") for b in ("multiply", "add")]
    + [f"decode_matmul{c}_bias{g}_residual_{b}" for c, g in (("_cast", "_gelu"), ("", "_gelu"), ("_cast", ""), ("", ""))
       for b in ("multiply", "add")]
    + [f"matmul_transposed_bias{a}_residual_{b}" for a in ("_gelu", "_relu", "") for b in ("multiply", "add")]
    + [f"matmul_bias{a}_residual_{b}" for a in ("_gelu", "_relu", "") for b in ("multiply", "add")]
    + [f"conv2d_bias{a}_residual_{b}" for a in ("_silu", "_relu", "") for b in ("multiply", "add")]
    + ["decode_matmul_cast_bias_gelu", "decode_matmul_bias_gelu", "decode_matmul_cast_bias",
       "decode_matmul_cast", "decode_matmul_bias", "decode_matmul"]
    + ["matmul_transposed_bias_gelu", "matmul_transposed_bias_relu", "matmul_transposed_bias",
       "matmul_transposed", "matmul_bias_gelu", "matmul_bias_relu", "matmul_bias", "matmul"]
    + ["conv2d_bias_silu", "conv2d_bias_relu", "conv2d_bias", "conv2d"]
)

CUBLAS_ORDER = ["matmul_transposed_multiply", "matmul_transposed_dequantize", "matmul_transposed_bias_gelu",
                "matmul_transposed_bias_relu", "matmul_transposed_bias", "matmul_transposed",
                "matmul_bias_gelu", "matmul_bias_relu", "matmul_bias", "matmul"]


def names(prefix: str) -> list:
    return [e.name for e in get_patterns_with_prefix(prefix)]


def test_cutlass_table_has_79_entries_in_priority_order():
    assert len(CUTLASS_ORDER) == 79
    assert names("cutlass") == ["cutlass." + n for n in CUTLASS_ORDER]
    assert names("cutlass")[17] == "cutlass.matmul_transposed_bias_gelu_residual_multiply_relu"
    assert names("cutlass")[22] == "cutlass.matmul_transposed_bias_residual_add_relu"


def test_cublas_table_has_10_entries_in_priority_order():
    assert names("cublas") == ["cublas." + n for n in CUBLAS_ORDER]


def test_matmul_entries_annotations_and_shapes():
    entries = {e.name: e for e in get_patterns_with_prefix("cutlass")}
    e = entries["cutlass.matmul_transposed_bias_relu"]
    assert list(e.annotation_patterns) == ["lhs", "rhs", "root", "bias"]
    assert repr(e.pattern) == ('is_op("relax.nn.relu")(is_op("relax.add")(is_op("relax.matmul")(wildcard(), '
                               'is_op("relax.permute_dims")(wildcard())), wildcard()))')
    assert e.check is check_matmul
    assert e.annotation_patterns["rhs"] is e.pattern.args[0].args[0].args[1].args[0]
    res = entries["cutlass.matmul_bias_residual_multiply_relu"]
    assert list(res.annotation_patterns) == ["lhs", "rhs", "root", "bias", "residual"]
    assert res.pattern.op.expr.name == "relax.nn.relu"
    assert repr(res.pattern.args[0]).startswith('(is_op("relax.multiply")(is_op("relax.add")(')
    conv = entries["cutlass.conv2d_bias_silu"]
    assert list(conv.annotation_patterns) == ["lhs", "rhs", "root", "bias"] and conv.check is check_conv2d
    assert list(entries["cutlass.layer_norm"].annotation_patterns) == []
    assert list(entries["cutlass.rms_norm"].annotation_patterns) == ["gv", "inp", "rms_norm"]
    assert entries["cutlass.attention"].check is None
    var_len = entries["cutlass.attention_var_len"]
    assert len(var_len.pattern.args) == 7
    decode = entries["cutlass.decode_matmul_cast_bias_gelu"]
    assert list(decode.annotation_patterns) == ["root", "lhs", "w_encoded", "w_decoded", "scales", "bias"]


def test_cublas_special_entries():
    entries = {e.name: e for e in get_patterns_with_prefix("cublas")}
    deq = entries["cublas.matmul_transposed_dequantize"]
    assert list(deq.annotation_patterns) == ["lhs", "rhs", "root", "scale", "zp"]
    assert deq.pattern.op.expr.name == "relax.dequantize"
    mul = entries["cublas.matmul_transposed_multiply"]
    assert list(mul.annotation_patterns) == ["lhs", "rhs", "scaleA", "scaleB", "root"]
    assert repr(mul.pattern) == (
        'is_op("relax.astype")(is_op("relax.multiply")(is_op("relax.matmul")(wildcard(), '
        'is_op("relax.permute_dims")(wildcard())), is_op("relax.multiply")(wildcard().has_shape([1]), '
        'wildcard().has_shape([1]))))')


def test_stacked_attention_variants():
    stacked = [e for e in get_patterns_with_prefix("cutlass") if e.name == "cutlass.stacked_attention"]
    keys = [list(e.annotation_patterns) for e in stacked]
    assert keys[0][-1] == "bias" and "strided_slice_value" in keys[0]
    assert "split" in keys[2] and keys[3][-1] == "split"


def test_register_patterns_last_registered_first_and_tuples():
    pattern, annotations = make_matmul_pattern()
    try:
        register_patterns([("zz_test.a", pattern), ("zz_test.b", pattern, annotations),
                           FusionPattern("zz_test.c", pattern)])
        assert names("zz_test") == ["zz_test.c", "zz_test.b", "zz_test.a"]
        assert get_pattern("zz_test.b").annotation_patterns == annotations
        assert get_pattern("zz_test.missing") is None
    finally:
        remove_patterns(["zz_test.a", "zz_test.b", "zz_test.c"])
    assert names("zz_test") == []


def test_importing_backends_is_cheap_and_registers_lazily():
    code = ("import sys, byocc.backends as b\n"
            "print('byocc.backends.cutlass.patterns' in sys.modules, 'numpy' in sys.modules)\n"
            "print(len(b.get_patterns_with_prefix('cutlass')), 'numpy' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False", "79", "False"]
