"""The CUTLASS backend's attention step (docs/codegen.md#attention): every composite form
(attention, attention_bias, both stacked_attention forms) becomes one call of the fused
attention kernel with the right views, strides, scale, mask and window; the manifest records
it; unsupported configurations are CodegenErrors naming function and composite; the generated
units compile with nvcc for sm_80 and sm_90a (compile only, no CUTLASS)."""

from __future__ import annotations

import importlib.util
import math
import os
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


# -- the sm_90a fused path (CUTLASS Hopper FMHA) ------------------------------------------------


def generate_with(text: str, options: dict):
    out = partition(parse_module(text), get_patterns_with_prefix("cutlass"), path="annotate", run_codegen=True,
                    codegens={"cutlass": lambda f, o, c: codegen(f, {**(o or {}), **options}, c)})
    (gm,) = out.attrs["external_mods"]
    return gm


SQ = ((2, 128, 4, 64), (2, 128, 4, 64), (2, 128, 4, 64))


@pytest.mark.parametrize("kw,why", [
    (dict(dtype="float32"), "dtype float32"),
    (dict(bias=(1, 4, 128, 128)), "a bias"),
    (dict(attrs="scale=None, causal_mask=None, window_size=16"), "a window"),
    (dict(attrs="scale=T.float32(-0.5), causal_mask=None, window_size=None"), "scale -0.5"),
    (dict(attrs="scale=T.float32(0.0), causal_mask=None, window_size=None"), "scale 0.0"),
    (dict(shapes=((2, 128, 4, 32),) * 3), "head dim 32"),
    (dict(shapes=((2, 128, 4, 36),) * 3), "head dim 36"),
    (dict(shapes=((2, 128, 4, 64), (2, 128, 4, 64), (2, 128, 4, 32))), "value head dim"),
    (dict(shapes=((2, 100, 4, 64), (2, 128, 4, 64), (2, 128, 4, 64))), "seq_q 100"),
    (dict(shapes=((2, 128, 4, 64), (2, 64, 4, 64), (2, 64, 4, 64)),
          attrs='scale=None, causal_mask="BottomRight", window_size=None'), "BottomRight mask with seq_kv < seq_q"),
    (dict(options={"arch": ["sm_80"]}), "no sm_90a"),
])
def test_fused_variant_refusals_are_recorded(kw, why):
    """Calls the fused kernel can never run keep the SIMT kernel only, and the manifest says why."""
    q, k, v = kw.pop("shapes", SQ)
    options = kw.pop("options", {})
    gm = generate_with(module(q, k, v, **kw), options)
    (e,) = gm.entries
    (step,) = e.steps
    assert why in step["fused_refused"] and step["kernel"] == "simt"
    assert [v["impl"] for v in step["variants"]] == ["fused_attention_simt"]
    assert not any("attention_sm90_" in p for p in e.kernel_sources)
    assert not any(s.path == "src/byocc_attention_sm90.cuh" for s in gm.sources)
    text = wrapper(gm, e)
    assert "kNotApplicable" not in text and "BYOCC_NO_SM90" not in text
    assert e.scratch_bytes == 0


@pytest.mark.parametrize("attrs,mask,tag", [
    ("scale=None, causal_mask=None, window_size=None", "kNoMask", "none"),
    ('scale=T.float32(0.3), causal_mask="TopLeft", window_size=None', "kTopLeft", "top_left"),
    ('scale=None, causal_mask="BottomRight", window_size=None', "kBottomRight", "bottom_right"),
])
@pytest.mark.parametrize("dtype,element", [("float16", "cutlass::half_t"), ("bfloat16", "cutlass::bfloat16_t")])
@pytest.mark.parametrize("h,bucket,tile", [(64, 64, "128x128x64"), (128, 128, "128x128x128"), (96, 128, "128x128x128"),
                                           (256, 256, "128x64x256")])
def test_fused_unit_and_run_time_selection(attrs, mask, tag, dtype, element, h, bucket, tile):
    short = {"float16": "f16", "bfloat16": "bf16"}[dtype]
    gm = generate(module((2, 64, 8, h), (2, 80, 2, h), (2, 80, 2, h), dtype=dtype, attrs=attrs))  # GQA 4:1
    (e,) = gm.entries
    name = f"attention_sm90_{short}_h{bucket}_{tag}"
    unit = f"src/kernels/{name}.cu"
    assert e.kernel_sources == (unit, f"src/kernels/attention_{short}_h{bucket}.cu")
    paths = {s.path: s for s in gm.sources}
    src = paths[unit]
    assert src.unit == "sm90" and gm.needs_cutlass  # built for sm_90a only, with the CUTLASS include path
    assert '#include "byocc_attention_sm90.cuh"' in src.text
    assert f"sm90::run<{element}, {bucket}, {mask}>(p, lse, lse_bytes, stream)" in src.text
    assert "tma_warpspecialized_cooperative" in src.text  # seq_q 64: no ping-pong unit (a query tail)
    assert f"int {name}_run(const Params& p, void* lse, uint64_t lse_bytes, cudaStream_t stream)" in src.text
    assert f"tile {tile}" in src.text.replace("\n// ", " ")
    header = paths["src/byocc_attention_sm90.cuh"].text
    assert '#include "kernel/fmha_kernel_builder.hpp"' in header and "struct MaskFusion" in header
    text = wrapper(gm, e)
    # run time: the fused unit on a compute-capability-9 device, then the SIMT kernel when it
    # reports kNotApplicable; a launch error of either is returned
    fused_call = f"frc = byocc::attention::{name}_run(p, step_scratch, step_scratch_bytes, stream);"
    simt_call = f"const int arc = byocc::attention::attention_{short}_h{bucket}_run(p, stream);"
    assert text.index("#ifndef BYOCC_NO_SM90") < text.index("if (dev.major == 9) {") < text.index(fused_call)
    assert text.index(fused_call) < text.index("if (frc == byocc::attention::kNotApplicable) {") < text.index(simt_call)
    assert "if (frc > 0) {" in text and "sm_90a attention kernel launch failed" in text
    assert field(text, "mask") == f"byocc::attention::{mask}"
    (step,) = e.steps
    assert step["kernel"] == "sm90_fmha_then_simt"
    fused, simt = step["variants"]
    assert fused["arch"] == "sm_90a" and fused["impl"] == "fused_attention_sm90" and fused["kernel"] == unit
    assert fused["tile"] == [int(x) for x in tile.split("x")] and "88_hopper_fmha" in fused["source"]
    assert simt["impl"] == "fused_attention_simt"
    assert e.scratch_bytes == 2 * 8 * 64 * 4  # fp32 softmax statistics: batch * heads * seq_q


@pytest.mark.parametrize("h,q,kv,attrs,pingpong", [
    (64, 256, 512, "scale=None, causal_mask=None, window_size=None", "128x128x64"),
    (64, 256, 448, "scale=None, causal_mask=None, window_size=None", None),  # a key tail (448 % 128)
    (128, 128, 384, "scale=None, causal_mask=None, window_size=None", "128x128x128"),
    (128, 128, 320, "scale=None, causal_mask=None, window_size=None", None),  # a key tail (320 % 128)
    (64, 136, 128, "scale=None, causal_mask=None, window_size=None", None),  # a query tail (136 % 128)
    (64, 256, 256, 'scale=None, causal_mask="BottomRight", window_size=None', None),  # masked
    (256, 256, 256, "scale=None, causal_mask=None, window_size=None", None),  # no ping-pong kernel for 256
])
def test_pingpong_unit_runs_first_where_it_can(h, q, kv, attrs, pingpong):
    """Unmasked calls without static tails get the ping-pong unit before the cooperative one."""
    gm = generate(module((2, q, 4, h), (2, kv, 4, h), (2, kv, 4, h), attrs=attrs))
    (e,) = gm.entries
    bucket = {64: 64, 128: 128, 256: 256}[h]
    tag = "none" if "None, window" in attrs else "bottom_right"
    coop = f"attention_sm90_f16_h{bucket}_{tag}"
    names = [s.removeprefix("src/kernels/").removesuffix(".cu") for s in e.kernel_sources]
    assert names == ([f"{coop}_pingpong"] if pingpong else []) + [coop, f"attention_f16_h{bucket}"]
    impls = [(v["impl"], v.get("schedule")) for v in e.steps[0]["variants"]]
    assert impls == ([("fused_attention_sm90", "tma_warpspecialized_pingpong")] if pingpong else []) + [
        ("fused_attention_sm90", "tma_warpspecialized_cooperative"), ("fused_attention_simt", None)]
    if pingpong:
        src = {s.path: s for s in gm.sources}[f"src/kernels/{coop}_pingpong.cu"]
        assert f"sm90::run_pingpong<cutlass::half_t, {bucket}>(p, lse, lse_bytes, stream)" in src.text
        assert src.unit == "sm90" and f"tile {pingpong}" in src.text
        text = wrapper(gm, e)
        first = text.index(f"frc = byocc::attention::{coop}_pingpong_run(")
        assert first < text.index("if (frc == byocc::attention::kNotApplicable) {") < text.index(
            f"frc = byocc::attention::{coop}_run(") < text.index(f"attention_f16_h{bucket}_run(p, stream)")


def test_fused_units_are_shared_and_one_per_variant():
    """Two functions of one dtype, bucket and mask share one unit; another mask is another unit."""
    one = module((2, 64, 4, 64), (2, 64, 4, 64), (2, 64, 4, 64)).replace("def main(", "def first(")
    two = module((4, 32, 2, 48), (4, 32, 2, 48), (4, 32, 2, 48)).split("class Module:\n")[1].replace("def main(", "def second(")
    three = module((2, 64, 4, 64), (2, 64, 4, 64), (2, 64, 4, 64),
                   attrs='scale=None, causal_mask="TopLeft", window_size=None').split("class Module:\n")[1]
    gm = generate(one + two + three.replace("def main(", "def third("))
    units = sorted(s.path for s in gm.sources if s.unit == "sm90")
    assert units == ["src/kernels/attention_sm90_f16_h64_none.cu", "src/kernels/attention_sm90_f16_h64_top_left.cu"]


def test_fused_header_states_its_run_time_rules():
    """The fixed C++ checks what the docs promise before it launches anything."""
    text = (ROOT / "byocc/backends/cuda/csrc/byocc_attention_sm90.cuh").read_text()
    applies = text[text.index("bool applies("):text.index("// Runs p with kernel K")]
    for rule in ("p.head_dim != p.head_dim_v", "p.head_dim % 8 != 0", "p.seq_q % 8 != 0",
                 "p.mask == kBottomRight && p.seq_kv < p.seq_q", "!(p.scale > 0.f)", "p.bias != nullptr",
                 "p.window > 0", "aligned16(p.out)", "strides_ok(p.k_stride)", "<= lse_bytes"):
        assert rule in applies, rule
    run = text[text.index("int run_kernel("):]
    assert run.index("applies<kD>(p, lse_bytes)") < run.index("can_implement") < run.index("<<<grid, block, smem, stream>>>")
    assert "params.mainloop.scale_softmax = p.scale;" in run  # the IR's scale, not 1/sqrt(head_dim)
    pingpong = text[text.index("int run_pingpong("):]
    assert pingpong.index("p.mask != kNoMask || p.seq_q % kRows != 0 || p.seq_kv % kKeys != 0") < pingpong.index(
        "run_kernel<Config<Element, Shape, Pingpong, kNoMask>")


def test_build_files_carry_the_fmha_include_path(tmp_path):
    """``partition -o`` writes config.ninja and CMakeLists.txt with CUTLASS's
    examples/88_hopper_fmha folder among the CUTLASS include directories."""
    pytest.importorskip("cutlass_library")
    from byocc.backends.toolchain import FMHA_EXAMPLE
    from byocc.backends.toolchain import find_cutlass

    dirs = find_cutlass()
    assert dirs is not None and dirs[-1].endswith(FMHA_EXAMPLE)
    assert (Path(dirs[-1]) / "kernel" / "fmha_kernel_builder.hpp").is_file()
    out = tmp_path / "o"
    res = CliRunner().invoke(cli, ["partition", str(ROOT / "samples/attention_fp16.relax"), "--backend", "cutlass",
                                   "-o", str(out)])
    assert res.exit_code == 0, res.output
    flags = next(line for line in (out / "config.ninja").read_text().splitlines() if line.startswith("cutlass_cflags"))
    assert f"-I{dirs[-1]}" in flags.split()
    assert dirs[-1] in (out / "CMakeLists.txt").read_text()
    import json

    build = json.loads((out / "manifest.json").read_text())["build"]
    (unit,) = [u for u in build["units"] if u["path"] == "src/kernels/attention_sm90_f16_h64_none.cu"]
    assert unit["kind"] == "sm90" and unit["archs"] == ["sm_90a"] and unit["needs_cutlass"]


@pytest.mark.skipif(NVCC is None, reason="nvcc not installed")
@pytest.mark.skipif(importlib.util.find_spec("cutlass_library") is None, reason="nvidia-cutlass wheel not installed")
def test_generated_fused_attention_unit_compiles(tmp_path):
    """The sample's sm_90a unit (CUTLASS Hopper FMHA, f16, head dim 64, no mask), compile only,
    with the build's flags and include path (~50 s)."""
    from byocc.backends.toolchain import NVCC_ARCH_FLAGS
    from byocc.backends.toolchain import NVCC_COMMON_FLAGS
    from byocc.backends.toolchain import find_cutlass

    out = tmp_path / "o"
    res = CliRunner().invoke(cli, ["partition", str(ROOT / "samples/attention_fp16.relax"), "--backend", "cutlass",
                                   "-o", str(out)])
    assert res.exit_code == 0, res.output
    unit = out / "src/kernels/attention_sm90_f16_h64_none.cu"
    cmd = [NVCC, *NVCC_COMMON_FLAGS, *NVCC_ARCH_FLAGS["sm90"], *(f"-I{d}" for d in find_cutlass() or ()),
           f"-I{out / 'src'}", "-c", str(unit), "-o", str(tmp_path / "fused.o")]
    lock = "/tmp/byocc_nvcc_heavy.lock"
    if shutil.which("flock") and os.access("/tmp", os.W_OK):
        cmd = ["flock", lock, *cmd]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    symbols = subprocess.run(["nm", "-C", str(tmp_path / "fused.o")], capture_output=True, text=True)
    if symbols.returncode == 0:
        assert "byocc::attention::attention_sm90_f16_h64_none_run(byocc::attention::Params const&" in symbols.stdout


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


# -- a constant causal bias (the additive mask exporters write) ----------------------------------
def _bias_module(plane, shape=(1, 1, 128, 128), seq_kv=128):
    import numpy as np

    from byocc.script import ir as I
    from byocc.script import relax as R

    bias = np.broadcast_to(np.asarray(plane, np.float16), shape).copy()

    @I.ir_module
    class Mod:
        @R.function
        def main(q: R.Tensor((1, 128, 4, 64), "float16"), k: R.Tensor((1, seq_kv, 4, 64), "float16"),
                 v: R.Tensor((1, seq_kv, 4, 64), "float16")):
            with R.dataflow():
                y = R.nn.attention(q, k, v, R.const(bias))
                R.output(y)
            return y

    return Mod


def _bias_step(mod):
    out = partition(mod, get_patterns_with_prefix("cutlass"), path="annotate", run_codegen=True,
                    codegens={"cutlass": codegen})
    (gm,) = out.attrs["external_mods"]
    (e,) = gm.entries
    (step,) = e.steps
    return gm, e, step


def test_a_constant_causal_bias_runs_as_the_causal_mask_on_the_fused_kernel():
    """The Llama export adds a constant triu(-inf) mask to the scores: attention_bias kept it
    on the SIMT kernel (4.5 ms on the H200 for 1x2048x32x128). Read as the mask it spells, the
    call takes the fused causal kernel and the bias is never read."""
    import numpy as np

    seq = 128
    causal = np.triu(np.full((seq, seq), -np.inf), 1)
    gm, e, step = _bias_step(_bias_module(causal))
    assert step["causal_mask"] == "TopLeft" and "causal mask" in step["bias"]
    assert step["kernel"] == "sm90_fmha_then_simt"
    assert any("attention_sm90_f16_h64_top_left" in p for p in e.kernel_sources)
    text = wrapper(gm, e)
    assert "run as the TopLeft mask" in text and field(text, "mask") == "byocc::attention::kTopLeft"
    # float16's lowest value instead of -inf, and one bias per head alike: the same mask
    lowest = np.where(causal == 0, 0.0, np.finfo(np.float16).min)
    _, _, step = _bias_step(_bias_module(lowest, shape=(1, 4, seq, seq)))
    assert step["causal_mask"] == "TopLeft"
    # keys beyond the queries: the bottom-right diagonal
    br = np.where(np.arange(192)[None, :] <= np.arange(seq)[:, None] + 64, 0.0, -np.inf)
    _, _, step = _bias_step(_bias_module(br, shape=(1, 1, seq, 192), seq_kv=192))
    assert step["causal_mask"] == "BottomRight"


@pytest.mark.parametrize("change", ["one_seen_key_biased", "mask_too_mild", "upper_left", "heads_differ"])
def test_a_constant_bias_that_is_not_exactly_causal_stays_a_bias(change):
    import numpy as np

    seq = 128
    plane = np.triu(np.full((seq, seq), -np.inf), 1)
    shape = (1, 1, seq, seq)
    if change == "one_seen_key_biased":
        plane[5, 2] = 0.5
    elif change == "mask_too_mild":
        plane[plane == -np.inf] = -1000.0  # exp(-1000) is 0 in float32, but scores of 1000 exist
    elif change == "upper_left":
        plane = plane.T.copy()
    else:
        plane = np.stack([plane, plane, plane, np.zeros_like(plane)])[None]
        shape = (1, 4, seq, seq)
    _, _, step = _bias_step(_bias_module(plane, shape=shape))
    assert step["causal_mask"] is None and step["bias"] == "broadcast_strides"
    assert "a bias" in step["fused_refused"]
