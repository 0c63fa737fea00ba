"""The CUTLASS backend's attention step (docs/codegen.md#attention): every composite form
(attention, attention_bias, both stacked_attention forms) becomes one call of the fused
attention kernel with the right views, strides, scale, mask and window; the manifest records
it; unsupported configurations are CodegenErrors naming function and composite; the generated
units compile with nvcc for sm_80 and sm_90a (compile only, no CUTLASS)."""

from __future__ import annotations

import math
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from byocc.backends import get_patterns_with_prefix
from byocc.backends.codegen import CodegenError
from byocc.backends.cutlass.codegen import codegen
from byocc.backends.cutlass.codegen import supports
from byocc.cli.main import cli
from byocc.text import parse_module
from byocc.transform import partition

ROOT = Path(__file__).resolve().parents[2]
NVCC = shutil.which("nvcc")


def generate(text: str, path: str = "annotate"):
    out = partition(parse_module(text), get_patterns_with_prefix("cutlass"), path=path, run_codegen=True,
                    codegens={"cutlass": codegen})
    (gm,) = out.attrs["external_mods"]
    return gm


def module(q, k, v, dtype="float16", bias=None, attrs="scale=None, causal_mask=None, window_size=None"):
    out = (q[0], q[1], q[2], v[3])
    params = [f'q: R.Tensor({q}, dtype="{dtype}")', f'k: R.Tensor({k}, dtype="{dtype}")',
              f'v: R.Tensor({v}, dtype="{dtype}")']
    args = "q, k, v"
    if bias is not None:
        params.append(f'bias: R.Tensor({bias}, dtype="{dtype}")')
        args += ", bias"
    return f"""
@I.ir_module
class Module:
    @R.function
    def main({", ".join(params)}) -> R.Tensor({out}, dtype="{dtype}"):
        with R.dataflow():
            y: R.Tensor({out}, dtype="{dtype}") = R.nn.attention({args}, {attrs})
            R.output(y)
        return y
"""


def stacked_module(b=2, s=16, n=4, h=32, start="split", dtype="float16", bias=False):
    d = 3 * n * h
    part = f'R.Tensor(({b}, {s}, {n * h}), dtype="{dtype}")'
    if start == "split":
        cut = [f"parts: R.Tuple({part}, {part}, {part}) = R.split(qkv, indices_or_sections=3, axis=2)",
               *(f"{x}0: {part} = parts[{i}]" for i, x in enumerate("qkv"))]
    else:
        cut = [f"{x}0: {part} = R.strided_slice(qkv, axes=[2], begin=[{i * n * h}], end=[{(i + 1) * n * h}], "
               "strides=[1])" for i, x in enumerate("qkv")]
    four = f'R.Tensor(({b}, {s}, {n}, {h}), dtype="{dtype}")'
    lines = [*cut, *(f"{x}: {four} = R.reshape({x}0, R.shape([{b}, {s}, {n}, {h}]))" for x in "qkv")]
    params = f'qkv: R.Tensor(({b}, {s}, {d}), dtype="{dtype}")'
    args = "q, k, v"
    if bias:
        params += f', bias: R.Tensor((1, {n}, 1, {s}), dtype="{dtype}")'
        args += ", bias"
    lines.append(f"y: {four} = R.nn.attention({args}, scale=None, causal_mask=None, window_size=None)")
    body = "\n".join("            " + x for x in lines)
    return f"""
@I.ir_module
class Module:
    @R.function
    def main({params}) -> {four}:
        with R.dataflow():
{body}
            R.output(y)
        return y
"""


def wrapper(gm, entry) -> str:
    (src,) = [s for s in gm.sources if s.path == entry.source_file]
    return src.text


def field(text: str, name: str) -> str:
    m = re.search(rf"^\s*p\.{re.escape(name)} = (.*);$", text, re.M)
    assert m, name
    return m.group(1)


def test_supports_attention_composites_but_not_var_len():
    for name in ("cutlass.attention", "cutlass.attention_bias", "cutlass.stacked_attention"):
        assert supports(name)
    assert not supports("cutlass.attention_var_len")


@pytest.mark.parametrize("dtype,tag", [("float16", "f16"), ("bfloat16", "bf16"), ("float32", "f32")])
@pytest.mark.parametrize("h,bucket", [(64, 64), (128, 128), (40, 64), (32, 32), (256, 256)])
def test_plain_attention_dtypes_and_head_dims(dtype, tag, h, bucket):
    gm = generate(module((2, 16, 4, h), (2, 24, 4, h), (2, 24, 4, h), dtype=dtype))
    (e,) = gm.entries
    assert e.composites == ("cutlass.attention",)
    unit = f"src/kernels/attention_{tag}_h{bucket}.cu"
    fused = dtype != "float32" and bucket != 32  # the sm_90a kernel: f16/bf16, buckets 64/128/256
    fused_unit = f"src/kernels/attention_sm90_{tag}_h{bucket}_none.cu"
    assert e.kernel_sources == ((fused_unit,) if fused else ()) + (unit,)
    paths = {s.path: s for s in gm.sources}
    assert {"src/byocc_attention.h", "src/byocc_attention.cuh", unit} <= set(paths)
    assert ("src/byocc_attention_sm90.cuh" in paths) == fused
    assert paths[unit].unit == "light" and "launch<" in paths[unit].text
    assert gm.needs_cutlass == fused
    text = wrapper(gm, e)
    assert f"p.head_dim = {h};" in text and field(text, "seq_kv") == "int64_t(24)"
    assert float(field(text, "scale").rstrip("f")) == pytest.approx(1 / math.sqrt(h))
    assert field(text, "mask") == "byocc::attention::kNoMask"
    assert field(text, "bias") == "nullptr"
    (step,) = e.steps
    assert step["kind"] == "attention" and step["dtype"] == dtype and step["head_dim"] == h
    simt = {"arch": "sm_80", "impl": "fused_attention_simt", "kernel": unit, "head_dim_bucket": bucket}
    assert step["variants"][-1] == simt and len(step["variants"]) == 1 + fused
    assert [a.role for a in e.args] == ["query", "key", "value"]
    # the fused kernel's fp32 softmax statistics, batch * heads * seq_q, in the step's scratch
    assert e.scratch_bytes == (2 * 4 * 16 * 4 if fused else 0)
    if fused:
        assert step["variants"][0]["impl"] == "fused_attention_sm90" and step["variants"][0]["kernel"] == fused_unit
        assert step["kernel"] == "sm90_fmha_then_simt" and "fused_refused" not in step
    else:
        assert step["kernel"] == "simt" and step["fused_refused"]


@pytest.mark.parametrize("bias,strides", [
    ((2, 4, 16, 24), ["(int64_t(2) == 1 ? int64_t(0) : int64_t(24) * int64_t(16) * int64_t(4))",
                      "(int64_t(4) == 1 ? int64_t(0) : int64_t(24) * int64_t(16))",
                      "(int64_t(16) == 1 ? int64_t(0) : int64_t(24))", "int64_t(1)"]),
    ((1, 4, 1, 24), ["(int64_t(1) == 1 ? int64_t(0) : int64_t(24) * int64_t(1) * int64_t(4))",
                     "(int64_t(4) == 1 ? int64_t(0) : int64_t(24) * int64_t(1))",
                     "(int64_t(1) == 1 ? int64_t(0) : int64_t(24))", "int64_t(1)"]),
])
def test_bias_broadcast_strides(bias, strides):
    gm = generate(module((2, 16, 4, 64), (2, 24, 4, 64), (2, 24, 4, 64), bias=bias))
    (e,) = gm.entries
    assert e.composites == ("cutlass.attention_bias",)
    text = wrapper(gm, e)
    assert [field(text, f"bias_stride[{i}]") for i in range(4)] == strides
    assert e.args[3].role == "bias" and e.steps[0]["bias"] == "broadcast_strides"


@pytest.mark.parametrize("attrs,mask,window", [
    ('scale=T.float32(-0.5), causal_mask="TopLeft", window_size=None', "kTopLeft", "0"),
    ('scale=T.float32(1e-08), causal_mask="BottomRight", window_size=None', "kBottomRight", "0"),
    ('scale=None, causal_mask="BottomRight", window_size=8', "kBottomRight", "8"),
    ("scale=None, causal_mask=None, window_size=8", "kTopLeft", "8"),
])
def test_masks_windows_and_scales(attrs, mask, window):
    gm = generate(module((1, 16, 2, 64), (1, 40, 2, 64), (1, 40, 2, 64), attrs=attrs))
    (e,) = gm.entries
    text = wrapper(gm, e)
    assert field(text, "mask") == f"byocc::attention::{mask}"
    assert field(text, "window") == window
    if "-0.5" in attrs:
        assert field(text, "scale") == "-0.5f"
    if "1e-08" in attrs:
        assert float(field(text, "scale").rstrip("f")) == pytest.approx(1e-8)


def test_grouped_query_heads_and_value_head_dim():
    gm = generate(module((2, 16, 8, 128), (2, 32, 2, 128), (2, 32, 2, 96)))
    (e,) = gm.entries
    text = wrapper(gm, e)
    assert field(text, "heads") == "int64_t(8)" and field(text, "kv_heads") == "int64_t(2)"
    assert field(text, "head_dim_v") == "96"
    assert field(text, "k_stride[1]") == "int64_t(256)"  # Nkv * H
    assert field(text, "v_stride[2]") == "int64_t(96)"
    assert "p.heads % p.kv_heads != 0" in text
    assert e.kernel_sources == ("src/kernels/attention_f16_h128.cu",)  # Hv 96 != H 128: no fused variant
    assert "value head dim" in e.steps[0]["fused_refused"]


@pytest.mark.parametrize("start", ["split", "strided_slice"])
@pytest.mark.parametrize("bias", [False, True])
def test_stacked_views(start, bias):
    gm = generate(stacked_module(start=start, bias=bias))
    (e,) = gm.entries
    assert e.composites == ("cutlass.stacked_attention",)
    text = wrapper(gm, e)
    for name, off in (("q", 0), ("k", 128), ("v", 256)):
        assert field(text, name).endswith(f"+ (int64_t({off})) * kElem")
        assert field(text, f"{name}_stride[1]") == "int64_t(384)"
        assert field(text, f"{name}_stride[2]") == "int64_t(32)"
    assert e.args[0].role == "qkv" and e.steps[0]["layout"] == "stacked"


def test_symbolic_batch_and_sequence():
    text_mod = """
@I.ir_module
class Module:
    @R.function
    def main(q: R.Tensor(("b", "s", 4, 64), dtype="float16"), k: R.Tensor(("b", "t", 4, 64), dtype="float16"), v: R.Tensor(("b", "t", 4, 64), dtype="float16")) -> R.Tensor(("b", "s", 4, 64), dtype="float16"):
        b = T.int64()
        s = T.int64()
        t = T.int64()
        with R.dataflow():
            y: R.Tensor((b, s, 4, 64), dtype="float16") = R.nn.attention(q, k, v, scale=None, causal_mask="BottomRight", window_size=None)
            R.output(y)
        return y
"""
    gm = generate(text_mod)
    (e,) = gm.entries
    text = wrapper(gm, e)
    assert field(text, "batch") == "d.s0" and field(text, "seq_q") == "d.s1" and field(text, "seq_kv") == "d.s2"
    assert field(text, "q_stride[0]") == "d.s1 * int64_t(256)"


def test_workspace_parameter_is_accepted_and_unused(tmp_path):
    out = tmp_path / "o"
    res = CliRunner().invoke(cli, ["partition", str(ROOT / "tests/data/attention/chain_bsnh_fp16.relax"),
                                   "--backend", "cutlass", "--backend-steps", "--no-bind-constants", "-o", str(out)])
    assert res.exit_code == 0, res.output
    import json

    (f,) = json.loads((out / "manifest.json").read_text())["functions"]
    assert f["composites"] == ["cutlass.attention"]
    assert [a["role"] for a in f["args"]] == ["query", "key", "value", "workspace"]
    assert f["steps"][0]["workspace"] == "accepted, unused"
    assert f["steps"][0]["scale"] == 0.125
    assert f["scratch_bytes"] == 2 * 8 * 128 * 4  # only the fused kernel's softmax statistics


def test_head_dim_over_256_is_a_codegen_error():
    with pytest.raises(CodegenError, match=r"function fused_relax_nn_attention_cutlass, composite "
                                           r"cutlass.attention: head dim 320 exceeds .* maximum of 256"):
        generate(module((1, 8, 2, 320), (1, 8, 2, 320), (1, 8, 2, 320)))


def test_mixed_dtypes_are_a_codegen_error():
    text = module((1, 8, 2, 64), (1, 8, 2, 64), (1, 8, 2, 64)).replace('v: R.Tensor((1, 8, 2, 64), dtype="float16")',
                                                                      'v: R.Tensor((1, 8, 2, 64), dtype="float32")')
    with pytest.raises(CodegenError, match="composite cutlass.attention: attention needs q, k, v"):
        generate(text)


def test_merge_path_and_determinism():
    text = module((2, 16, 4, 64), (2, 16, 4, 64), (2, 16, 4, 64))
    a, b = generate(text, "merge"), generate(text, "merge")
    assert [(s.path, s.text) for s in a.sources] == [(s.path, s.text) for s in b.sources]


def test_sample_partitions_to_code(tmp_path):
    out = tmp_path / "o"
    res = CliRunner().invoke(cli, ["partition", str(ROOT / "samples/attention_fp16.relax"), "--backend", "cutlass",
                                   "-o", str(out)])
    assert res.exit_code == 0, res.output
    assert (out / "src/kernels/attention_f16_h64.cu").is_file()
    assert (out / "src/byocc_attention.cuh").is_file()


@pytest.mark.skipif(NVCC is None, reason="nvcc not installed")
@pytest.mark.parametrize("gencode", ["arch=compute_80,code=sm_80", "arch=compute_90a,code=sm_90a"])
def test_generated_attention_units_compile(tmp_path, gencode):
    """The sample's wrapper and kernel unit, compile only (no CUTLASS headers needed)."""
    out = tmp_path / "o"
    res = CliRunner().invoke(cli, ["partition", str(ROOT / "samples/attention_fp16.relax"), "--backend", "cutlass",
                                   "-o", str(out)])
    assert res.exit_code == 0, res.output
    units = [out / "src/kernels/attention_f16_h64.cu", *sorted((out / "src/funcs").glob("*.cu"))]
    for unit in units:
        proc = subprocess.run([NVCC, "-std=c++17", "-O3", "-DNDEBUG", "--expt-relaxed-constexpr", "-Xcompiler=-fPIC",
                               f"-I{out / 'src'}", f"-gencode={gencode}", "-c", str(unit), "-o",
                               str(tmp_path / (unit.stem + ".o"))], capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr[-3000:]
