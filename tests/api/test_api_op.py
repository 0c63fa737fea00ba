"""``relax.op``: one constructor per registered operator, with TVM's names, signatures and
defaults, building the calls TVM's own constructors build.

tests/data/api/ops_probe.txt is what TVM 0.27 printed for the same BlockBuilder steps
(conv2d ``padding=1`` widened to four values, ``reshape`` with ``-1`` resolved,
``attention`` attributes, ``split`` sections...)."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

from byocc import relax
from byocc.ops import REQUIRED
from byocc.ops import all_op_defs
from byocc.relax.op._generate import sub_namespaces

DATA = Path(__file__).parents[1] / "data" / "api"
FAMILIES = {"nn", "image", "builtin"}


def constructor(name: str):
    target = relax.op
    for part in name.split(".")[1:]:
        target = getattr(target, part)
    return target


def test_every_registered_op_has_a_constructor_with_its_signature():
    defs = all_op_defs()
    assert len(defs) > 100
    for opdef in defs:
        fn = constructor(opdef.name)
        assert callable(fn), opdef.name
        params = inspect.signature(fn).parameters
        if not opdef.varargs:
            assert list(params) == list(opdef.params), opdef.name
        for field in opdef.attrs:
            expected = inspect.Parameter.empty if field.default is REQUIRED else field.default
            assert params[field.name].default == expected, (opdef.name, field.name)


def test_op_families_are_tvm_submodules():
    assert set(sub_namespaces()) <= FAMILIES  # a new family needs its byocc/relax/op/<name>.py
    from byocc.relax.op.nn import conv2d  # importable as in TVM

    assert conv2d is relax.op.nn.conv2d
    assert str(inspect.signature(relax.op.matmul)) == "(x1, x2, out_dtype=None)"


def test_calls_print_as_tvm_builds_them():
    T = relax.TensorType
    x = relax.Var("x", T([1, 3, 8, 8], "float16"))
    w = relax.Var("w", T([4, 3, 3, 3], "float16"))
    q = relax.Var("q", T([2, 16, 4, 32], "float16"))
    m = relax.Var("m", T([8, 16], "float32"))
    op = relax.op
    bb = relax.BlockBuilder()
    with bb.function("main", [x, w, q, m]):
        with bb.dataflow():
            c = bb.emit(op.nn.conv2d(x, w, padding=1, out_dtype="float32"))
            c2 = bb.emit(op.nn.conv2d(x, w, strides=(2, 2), data_layout="NCHW"))
            p = bb.emit(op.nn.max_pool2d(c, pool_size=2, strides=2))
            r = bb.emit(op.reshape(p, [1, -1]))
            t = bb.emit(op.permute_dims(m, [1, 0]))
            mm = bb.emit(op.matmul(m, t, out_dtype="float32"))
            s = bb.emit(op.sum(mm, axis=1, keepdims=False))
            mean = bb.emit(op.mean(mm, axis=[0, 1]))
            a = bb.emit(op.nn.attention(q, q, q))
            a2 = bb.emit(op.nn.attention(q, q, q, scale=0.5, causal_mask="TopLeft"))
            ss = bb.emit(op.strided_slice(m, axes=[0], begin=[1], end=[4]))
            sp = bb.emit(op.split(m, [2, 5], axis=1))
            cl = bb.emit(op.clip(m, 0, 6))
            sm = bb.emit(op.nn.softmax(m, axis=-1))
            ln = bb.emit(op.nn.layer_norm(m, relax.const([1.0] * 16), relax.const([0.0] * 16), axes=[-1]))
            z = bb.emit(op.zeros((2, 3), "float32"))
            f = bb.emit(op.full((2,), relax.const(1.5), "float16"))
            ast = bb.emit(op.astype(m, "float16"))
            ex = bb.emit(op.expand_dims(m, 0))
            wh = bb.emit(op.where(op.greater(m, m), m, m))
            gl = bb.emit(op.nn.gelu(m))
            out = bb.emit_output((c2, r, s, mean, a, a2, ss, sp, cl, sm, ln, z, f, ast, ex, wh, gl))
        bb.emit_func_output(out)
    assert bb.get().script() + "\n" == (DATA / "ops_probe.txt").read_text(encoding="utf-8")


def test_attention_with_a_bias_is_the_bias_operator():
    q = relax.Var("q", relax.TensorType([2, 16, 4, 32], "float16"))
    b = relax.Var("b", relax.TensorType([2, 4, 16, 16], "float16"))
    assert relax.op.nn.attention(q, q, q, b).op.name == "relax.nn.attention_bias"
    assert relax.op.nn.attention(q, q, q, bias=None).op.name == "relax.nn.attention"


def test_missing_required_argument_is_a_type_error():
    from byocc.ir import TypeInferenceError

    m = relax.Var("m", relax.TensorType([8, 16], "float32"))
    with pytest.raises(TypeInferenceError, match="missing the required argument 'dtype'"):
        relax.op.astype(m)
