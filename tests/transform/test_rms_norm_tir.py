"""``R.nn.rms_norm`` lowered to the ``R.call_tir`` of a standard-form rms_norm prim_func for
the cutlass backend (byocc/transform/rms_norm_tir.py, docs/partitioning.md#rms_norm-for-cutlass):
the text is TVM's legalization's, the cutlass table matches it and the codegen reads its
epsilon, the interpreter and the .relax reader know exactly that form, and near misses
(another axis, another weight dtype, a symbolic shape, another prim_func) stay as they were."""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from byocc.backends import get_patterns_with_prefix
from byocc.cli.main import cli
from byocc.ir import Call
from byocc.ir import UnsupportedError
from byocc.ir.tir import PrimFunc
from byocc.ir.well_formed import well_formed
from byocc.runtime.interpreter import run_module
from byocc.text import parse_module
from byocc.text import read_file
from byocc.transform import partition
from byocc.transform.rms_norm_tir import rms_norm_prim_func
from byocc.transform.rms_norm_tir import rms_norm_to_call_tir
from byocc.transform.rms_norm_tir import standard_rms_norm

ROOT = Path(__file__).resolve().parents[2]
RNG = np.random.default_rng(11)


def tvm_sample_prim_func() -> PrimFunc:
    """The prim_func of samples/rms_norm_fp16.py: TVM's LegalizeOps of R.nn.rms_norm."""
    src = (ROOT / "samples" / "rms_norm_fp16.py").read_text()
    m = re.search(r"    @T\.prim_func.*?\n\n", src, re.S)
    assert m is not None
    return PrimFunc(textwrap.dedent(m.group(0)).strip())


def module(dims=(2, 16, 256), dtype="float16", wdtype=None, axes="[-1]", eps="9.9999999747524271e-07") -> str:
    n = dims[-1]
    x = ", ".join(str(d) if isinstance(d, int) else f'"{d}"' for d in dims)
    return f"""# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(({x}), dtype="{dtype}"), w: R.Tensor(({n},), dtype="{wdtype or dtype}"), m: R.Tensor(({n}, 32), dtype="{dtype}")):
        with R.dataflow():
            h = R.nn.rms_norm(x, w, axes={axes}, epsilon={eps})
            y = R.matmul(h, m, out_dtype="void")
            R.output(y)
        return y
"""


def ops(mod) -> list[str]:
    return [b.value.op.name for blk in mod["main"].body.blocks for b in blk.bindings
            if isinstance(b.value, Call) and hasattr(b.value.op, "name")]


def test_the_prim_func_is_the_text_tvm_legalization_prints():
    tvm = tvm_sample_prim_func()
    mine = rms_norm_prim_func((2, 16, 256), "float16", 1e-6)
    assert mine.key == tvm.key  # token for token, as TVM prints it
    got = standard_rms_norm(tvm)
    assert got is not None and (got.shape, got.dtype, got.eps) == ((2, 16, 256), "float16", 1e-6)


@pytest.mark.parametrize("change", [("0.00390625", "0.0039"), ("9.9999999999999995e-07", "1e-06"),
                                    ("T.sqrt(", "T.exp("), ('"SSR"', '"SRR"')])
def test_a_prim_func_not_exactly_the_standard_form_is_not_recognised(change):
    text = tvm_sample_prim_func().source
    assert change[0] in text
    assert standard_rms_norm(PrimFunc(text.replace(*change))) is None


def test_rms_norm_becomes_a_call_tir_the_cutlass_table_matches_and_keeps_its_value():
    mod = parse_module(module())
    low = rms_norm_to_call_tir(mod)
    assert well_formed(low) == []
    assert ops(low) == ["relax.call_tir", "relax.matmul"]
    prim = low["rms_norm"]
    assert isinstance(prim, PrimFunc)
    got = standard_rms_norm(prim)
    assert got is not None and got.eps == pytest.approx(9.9999999747524271e-07, rel=1e-15)
    args = [RNG.standard_normal(s).astype("float16") for s in ((2, 16, 256), (256,), (256, 32))]
    np.testing.assert_array_equal(np.asarray(run_module(low, args)), np.asarray(run_module(mod, args)))
    part = partition(low, get_patterns_with_prefix("cutlass"), path="merge")
    assert "cutlass.rms_norm" in part.script()
    assert "relax.call_tir" not in ops(part)  # main calls the offloaded function instead
    np.testing.assert_array_equal(np.asarray(run_module(part, args)), np.asarray(run_module(mod, args)))


def test_one_prim_func_per_shape_dtype_and_epsilon():
    text = module().replace("            y = R.matmul(h, m, out_dtype=\"void\")",
                            "            h2 = R.nn.rms_norm(h, w, axes=[-1], epsilon=9.9999999747524271e-07)\n"
                            "            h3 = R.nn.rms_norm(h2, w, axes=[-1], epsilon=1e-05)\n"
                            "            y = R.matmul(h3, m, out_dtype=\"void\")")
    low = rms_norm_to_call_tir(parse_module(text))
    assert ops(low).count("relax.call_tir") == 3
    assert sorted(n for n in low.names() if n.startswith("rms_norm")) == ["rms_norm", "rms_norm1"]


@pytest.mark.parametrize("kw", [{"axes": "[1]", "dims": (2, 256, 256)},
                                {"dims": ("n", 16, 256)}, {"dims": (256,)}, {"dtype": "float64"}])
def test_near_misses_stay_rms_norm(kw):
    """Another axis, a symbolic dim, rank 1, a dtype without a kernel."""
    mod = parse_module(module(**kw))
    assert rms_norm_to_call_tir(mod) is mod


def test_the_interpreter_refuses_other_tir():
    low = rms_norm_to_call_tir(parse_module(module()))
    other = PrimFunc(low["rms_norm"].source.replace("T.sqrt(", "T.exp("))
    bad = low.with_function("rms_norm", other, low.get_global_var("rms_norm"))
    args = [RNG.standard_normal(s).astype("float16") for s in ((2, 16, 256), (256,), (256, 32))]
    with pytest.raises(UnsupportedError, match="TIR functions cannot be interpreted"):
        run_module(bad, args)


def test_the_relax_reader_takes_back_only_its_own_prim_func():
    low = rms_norm_to_call_tir(parse_module(module()))
    text = low.script()
    again = parse_module(text)
    assert isinstance(again["rms_norm"], PrimFunc) and again["rms_norm"].key == low["rms_norm"].key
    with pytest.raises(UnsupportedError, match="TIR functions"):
        parse_module(text.replace("T.sqrt(", "T.exp("))


def onnx_rms_norm(tmp_path: Path) -> Path:
    pytest.importorskip("onnx")
    from onnx import TensorProto
    from onnx import helper
    from onnx import numpy_helper

    c = 64
    f = lambda n, v: helper.make_node("Constant", [], [n], value=numpy_helper.from_array(  # noqa: E731
        np.asarray(v, "float32"), n))
    nodes = [f("c2", 2.0), f("eps", 1e-6), f("one", 1.0),
             helper.make_node("Pow", ["x", "c2"], ["q"]),
             helper.make_node("ReduceMean", ["q"], ["v"], axes=[-1], keepdims=1),
             helper.make_node("Add", ["v", "eps"], ["ve"]), helper.make_node("Sqrt", ["ve"], ["s"]),
             helper.make_node("Div", ["one", "s"], ["r"]), helper.make_node("Mul", ["x", "r"], ["n"]),
             helper.make_node("Mul", ["w", "n"], ["h"]), helper.make_node("MatMul", ["h", "m"], ["y"])]
    inits = [numpy_helper.from_array(RNG.standard_normal(c).astype("float32"), "w"),
             numpy_helper.from_array(RNG.standard_normal((c, 32)).astype("float32"), "m")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8, c])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 8, 32])], initializer=inits)
    path = tmp_path / "rms.onnx"
    path.write_bytes(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString())
    return path


def test_partition_dtype_for_cutlass_offloads_the_exported_rms_norm(tmp_path):
    model = onnx_rms_norm(tmp_path)
    out = tmp_path / "out"
    res = CliRunner().invoke(cli, ["partition", str(model), "--dtype", "float16", "--backend", "cutlass",
                                   "--path", "merge", "-o", str(out)])
    assert res.exit_code == 0, res.output
    manifest = json.loads((out / "manifest.json").read_text())
    norms = [f for f in manifest["functions"] if f.get("composite") == "cutlass.rms_norm"]
    assert len(norms) == 1 and norms[0]["attrs"]["epsilon_source"] == "prim_func"
    assert norms[0]["attrs"]["epsilon"] == pytest.approx(1e-6, rel=1e-6)
    part = read_file(str(out / "rms.partitioned.relax"))  # byocc reads back what it wrote
    assert isinstance(part["rms_norm"], PrimFunc)
    assert not {"relax.nn.rms_norm", "relax.call_tir"} & set(ops(part))  # offloaded


def test_other_backends_and_no_recompose_keep_the_rms_norm_op(tmp_path):
    model = onnx_rms_norm(tmp_path)
    for extra in (["--backend", "cublas"], ["--backend", "cutlass", "--no-recompose"]):
        res = CliRunner().invoke(cli, ["partition", str(model), "--dtype", "float16", *extra])
        assert res.exit_code == 0, res.output
        assert "R.call_tir" not in res.output and "prim_func" not in res.output
    res = CliRunner().invoke(cli, ["partition", str(model), "--dtype", "float16", "--backend", "cutlass",
                                   "--print-after", "RmsNormToCallTIR"])
    assert res.exit_code == 0, res.output
