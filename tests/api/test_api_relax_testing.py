"""``byocc.relax.testing`` workload builders and ``byocc.contrib.cutlass.build``.

Expected texts are what TVM 0.27's builders print for the same arguments.
"""

from __future__ import annotations

import numpy as np
import pytest

from byocc.contrib.cutlass.build import is_shape_valid_for_cutlass_matmul
from byocc.ir import InputError
from byocc.ir import TirVar
from byocc.relax import op
from byocc.relax.backend.cuda.cublas import partition_for_cublas
from byocc.relax.testing import get_relax_attention_module
from byocc.relax.testing import get_relax_matmul_module
from byocc.relax.testing import get_relax_stacked_attention_module


def body(mod) -> list[str]:
    return str(mod).split("    @R.function\n", 1)[1].splitlines()


def test_matmul_module_with_symbolic_batch_and_transposed_rhs():
    a = TirVar("a")
    mod = get_relax_matmul_module((a, 3, 8), (3, 16, 8), "int8", out_dtype="int32", transposed_y=True)
    assert body(mod) == [
        '    def main(x: R.Tensor((a, 3, 8), dtype="int8"), y: R.Tensor((3, 16, 8), dtype="int8")) '
        '-> R.Tensor(dtype="int32", ndim=3):',
        "        with R.dataflow():",
        '            lv: R.Tensor((3, 8, 16), dtype="int8") = R.permute_dims(y, axes=[0, -1, -2])',
        '            lv1: R.Tensor(dtype="int32", ndim=3) = R.matmul(x, lv, out_dtype="int32")',
        "            R.output(lv1)",
        "        return lv1",
    ]


def test_matmul_module_with_every_epilogue_step():
    def residual(out, x):
        return op.multiply(out, op.strided_slice(x, [1], [0], [1]))

    mod = get_relax_matmul_module((4, 8), (8, 16), "float16", bias_shape=(4, 16), activation=op.nn.gelu,
                                  residual_bin_op=residual, residual_activation=op.nn.relu)
    assert [line.split(" = ", 1)[-1] for line in body(mod)[2:-2]] == [
        'R.matmul(x, y, out_dtype="float16")',
        "R.add(lv, bias)",
        "R.nn.gelu(lv1)",
        "R.strided_slice(x, (1,), (0,), (1,), assume_inbound=False)",
        "R.multiply(lv2, lv3)",
        "R.nn.relu(lv4)",
    ]
    assert list(mod["main"].attrs.items()) == [("global_symbol", "main")]


def test_matmul_module_partitions_for_cublas():
    mod = partition_for_cublas(get_relax_matmul_module((16, 32), (32, 8), "int8", "int32", bias_shape=(8,)))
    text = str(mod["main"])
    assert "fused_relax_matmul_cublas" in text and "R.add" in text


def test_attention_module():
    mod = get_relax_attention_module((2, 4, 3, 8), (2, 5, 3, 8), (2, 5, 3, 16), dtype="float16",
                                     bias_shape="none", causal_mask="TopLeft", window_size=4)
    assert body(mod)[2] == ('            lv: R.Tensor((2, 4, 3, 16), dtype="float16") = R.nn.attention('
                            'q, k, v, scale=None, causal_mask="TopLeft", window_size=4)')
    with_bias = get_relax_attention_module((2, 4, 3, 8), (2, 5, 3, 8), (2, 5, 3, 8), dtype="float32",
                                           bias_shape=(2, 3, 4, 5), qk_scale=0.5)
    assert [p.name_hint for p in with_bias["main"].params] == ["q", "k", "v", "bias"]
    assert "R.nn.attention_bias(q, k, v, bias, scale=T.float32(0.5), causal_mask=None" in str(with_bias)


def test_stacked_attention_split_and_strided_slice():
    qkv = np.zeros((2, 4, 72), "float16")
    split = get_relax_stacked_attention_module(qkv, 2, 4, 3, 8, 8, "split", qk_scale=0.5)
    lines = [line.split(" = ", 1)[-1] for line in body(split)[2:-2]]
    assert lines == [
        "R.split(qkv, indices_or_sections=[24, 48], axis=2)", "lv[0]",
        "R.reshape(lv1, R.shape([2, 4, 3, 8]))", "lv[1]", "R.reshape(lv3, R.shape([2, 4, 3, 8]))",
        "lv[2]", "R.reshape(lv5, R.shape([2, 4, 3, 8]))",
        "R.nn.attention(lv2, lv4, lv6, scale=T.float32(0.5), causal_mask=None, window_size=None)",
    ]
    sliced = get_relax_stacked_attention_module(qkv, 2, 4, 3, 8, 8, op="strided_slice")
    assert "R.strided_slice(qkv, (2,), (48,), (72,), (1,), assume_inbound=False)" in str(sliced)
    sbn = get_relax_stacked_attention_module(np.zeros((4, 2, 3, 24), "float16"), 2, 4, 3, 8, 8, "split",
                                             layout="SBN3H")
    assert body(sbn)[-3].endswith("= R.permute_dims(lv7, axes=[1, 0, 2, 3])")
    with pytest.raises(InputError, match=r"op must be 'split' or 'strided_slice', got 'concat'"):
        get_relax_stacked_attention_module(qkv, 2, 4, 3, 8, 8, "concat")


def test_is_shape_valid_for_cutlass_matmul_returns_bool():
    a, b = TirVar("a"), TirVar("b")
    assert is_shape_valid_for_cutlass_matmul((3, 4), (4, 5)) is True
    assert is_shape_valid_for_cutlass_matmul([1, 1, 16, 15], [3, a, 4, 15, 2]) is True
    assert is_shape_valid_for_cutlass_matmul((a, 2, 4, 16, 15), (a, 2, 4, 15, 2)) is True
    assert is_shape_valid_for_cutlass_matmul((3, a, 16, 15), (3, b, 15, 2)) is False
    assert is_shape_valid_for_cutlass_matmul((3, a), (a, 5)) is False  # K must be constant
    assert is_shape_valid_for_cutlass_matmul((3, 1, 1, 16, 15), (3, 2, 4, 15, 2)) is False


def test_tirx_expr_var_names_the_symbolic_dimension_class():
    from byocc.script import tirx as T

    a = T.expr.Var("a", "int64")
    assert isinstance(a, TirVar) and isinstance(a, T.expr.Var) and not isinstance(3, T.expr.Var)
    mod = get_relax_matmul_module((a, 16, 15), (a, 15, 2), "float16")
    assert mod["main"].params[0].struct_info.shape[0] is a
    assert is_shape_valid_for_cutlass_matmul((a, 16, 15), (a, 15, 2)) is True
