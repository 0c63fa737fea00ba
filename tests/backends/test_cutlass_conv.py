"""The CUTLASS codegen's conv2d steps (docs/codegen.md#cutlass-conv2d-family): the 16 conv
patterns planned and generated (problem, alignment tiers, epilogue classes, f16 and f32, the
C = 3 stem, strides, padding, dilation, groups), manifest records, the samples, the wrappers
run on the host against the interpreter (fake CUTLASS conv units computing one group per
call, the real generic direct convolution), and one real sm_80 conv unit compile."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from test_cutlass_codegen import HOST_EPILOGUE

from byocc.backends import get_patterns_with_prefix
from byocc.backends.cuda.common import common_sources
from byocc.backends.cutlass.codegen import codegen
from byocc.backends.cutlass.codegen import supports
from byocc.text import parse_module
from byocc.transform import partition

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "samples"
NVCC = shutil.which("nvcc")
needs_nvcc = pytest.mark.skipif(NVCC is None, reason="nvcc not installed")
needs_cutlass_library = pytest.mark.skipif(
    importlib.util.find_spec("cutlass_library") is None,
    reason="cutlass_library (nvidia-cutlass wheel, the byocc[cuda] extra) is not installed")


def shape(s) -> str:
    return "(" + ", ".join(str(v) for v in s) + ("," if len(s) == 1 else "") + ")"


def conv_module(xs, ws, dtype="float16", strides=(1, 1), padding=(0, 0, 0, 0), dilation=(1, 1), groups=1,
                bias=None, act=None, res=None, res_op="add", post=None, out_dtype=None, out_shape=None) -> str:
    """``out = post(res_op(act(conv2d(x, w) + bias), r))`` in NHWC/OHWI, stages optional."""
    od = out_dtype or dtype
    params = [f'x: R.Tensor({shape(xs)}, dtype="{dtype}")', f'w: R.Tensor({shape(ws)}, dtype="{dtype}")']
    od_attr = f'"{out_dtype}"' if out_dtype else "None"
    body = [f"c = R.nn.conv2d(x, w, strides={list(strides)}, padding={list(padding)}, dilation={list(dilation)}, "
            f'groups={groups}, data_layout="NHWC", kernel_layout="OHWI", out_layout="NHWC", out_dtype={od_attr})']
    cur = "c"
    for name, val, line in (("b", bias, "z = R.add({cur}, b)"), ("act", act, "a = R.nn.{act}({cur})"),
                            ("r", res, "q = R.{res_op}({cur}, r)"), ("post", post, "p = R.nn.relu({cur})")):
        if val is None:
            continue
        if name in ("b", "r"):
            params.append(f'{name}: R.Tensor({shape(val)}, dtype="{od}")')
        body.append(line.format(cur=cur, act=act, res_op=res_op))
        cur = body[-1].split(" ")[0]
    body.append(f"out = {cur}")
    lines = ["# from tvm.script import ir as I", "# from tvm.script import relax as R", "",
             "@I.ir_module", "class Module:", "    @R.function", f"    def main({', '.join(params)}):",
             "        with R.dataflow():", *(f"            {b}" for b in body),
             "            R.output(out)", "        return out", ""]
    return "\n".join(lines)


def partitioned(text: str, path="annotate"):
    return partition(parse_module(text), get_patterns_with_prefix("cutlass"), path=path)


def generate(text: str, path="annotate", arch=None):
    options = {"cutlass": {"arch": arch}} if arch else None
    out = partition(parse_module(text), get_patterns_with_prefix("cutlass"), path=path, run_codegen=True,
                    codegens={"cutlass": codegen}, target_options=options)
    (gm,) = out.attrs.get("external_mods", ())
    return gm


def gen(arch=None, **kw):
    gm = generate(conv_module(**kw), arch=arch)
    (entry,) = gm.entries
    return gm, entry


def unit_texts(gm, prefix="src/kernels/conv_", kind=None):
    return [s.text for s in gm.sources if s.path.startswith(prefix) and kind in (None, s.unit)]


X = (2, 16, 16, 32)
W = (64, 3, 3, 32)
OUT = (2, 16, 16, 64)
PAD1 = (1, 1, 1, 1)

#: The 16 conv patterns: (pattern, module kwargs, the unit's fused formula).
PATTERNS = [
    ("conv2d", {}, "D = acc"),
    ("conv2d_bias", dict(bias=(1, 1, 1, 64)), "D = acc + bias"),
    ("conv2d_bias_relu", dict(bias=(64,), act="relu"), "D = relu(acc + bias)"),
    ("conv2d_bias_silu", dict(bias=(1, 1, 1, 64), act="silu"), "D = silu(acc + bias)"),
]
for _act in (None, "relu", "silu"):
    for _op in ("add", "multiply"):
        for _post in (None, "relu"):
            _name = "conv2d_bias" + (f"_{_act}" if _act else "") + f"_residual_{_op}" + ("_relu" if _post else "")
            _z = f"{_act}(acc + bias)" if _act else "acc + bias"
            _f = f"{_z} {'+' if _op == 'add' else '*'} C"
            PATTERNS.append((_name, dict(bias=(64,), act=_act, res=OUT, res_op=_op, post=_post),
                             f"D = relu({_f})" if _post else f"D = {_f}"))


def test_sixteen_conv_patterns_are_supported():
    assert len(PATTERNS) == 16
    table = [p.name for p in get_patterns_with_prefix("cutlass") if p.name.startswith("cutlass.conv2d")]
    assert sorted(table) == sorted("cutlass." + name for name, _, _ in PATTERNS)
    assert all(supports(name) for name in table)


@pytest.mark.parametrize("name,kw,formula", PATTERNS, ids=[p[0] for p in PATTERNS])
def test_every_conv_pattern_generates_a_fused_sm80_unit(name, kw, formula):
    gm, entry = gen(xs=X, ws=W, padding=PAD1, **kw)
    assert entry.composites == (f"cutlass.{name}",)
    (step,) = entry.steps
    assert step["kind"] == "conv2d" and step["composite"] == f"cutlass.{name}"
    assert step["problem"] == {"N": 2, "H": 16, "W": 16, "C": 32, "K": 64, "R": 3, "S": 3, "P": 16, "Q": 16,
                               "padding": [1, 1, 1, 1], "strides": [1, 1], "dilation": [1, 1], "groups": 1}
    assert [(v.arch, v.impl, dict(v.params)["epilogue"]) for v in entry.variants] == [
        ("sm_90a", "cutlass3x_implicit_gemm", "fused"), ("sm_80", "cutlass2x_implicit_gemm", "fused"),
        ("sm_80", "generic_direct_conv", "generic (fused)")]
    assert dict(entry.variants[1].params)["alignments"] == {"a": 8, "b": 8, "d": 8}
    (unit,) = unit_texts(gm, kind="sm80")
    assert f"//   {formula.replace('acc', 'acc[n,p,q,k]')}\n" in unit
    residual = "residual" in name
    assert ("DefaultConv2dFpropWithBroadcast<" in unit) == residual
    assert "cutlass::conv::IteratorAlgorithm::kOptimized" in unit
    assert "cutlass::conv::StrideSupport::kStrided" in unit
    assert "cutlass::arch::Sm80" in unit and "GemmShape<16, 8, 16>" in unit
    roles = {a.name: a.role for a in entry.args}
    assert roles["x"] == "data" and roles["w"] == "weight"
    if "bias" in kw:
        assert roles["b"] == "bias"
    if residual:
        assert roles["r"] == "residual" and step["residual_class"] == "full"
    wrapper = next(s.text for s in gm.sources if s.path == entry.source_file)
    assert '#include "byocc_conv.h"' in wrapper
    assert {"src/byocc_conv.h", "src/byocc_conv.cuh", "src/kernels/generic_conv_f16_f16_f16.cu"} <= {
        s.path for s in gm.sources}


def test_c3_stem_is_padded_to_8_channels_for_the_fixed_channels_unit():
    """The 7x7/2 stem of every CNN (C = 3, f16): A and B are copied into scratch with 8
    channels (zeros after 3), then the 2.x fixed-channels fprop runs at alignment 8 (a k-tile
    spans 4 filter taps) instead of the alignment-1 Sm75 path; no sm_90a unit (3 channels
    are no k-tile; for sm_90a see the space-to-depth test below)."""
    gm, entry = gen(xs=(2, 224, 224, 3), ws=(64, 7, 7, 3), strides=(2, 2), padding=(3, 3, 3, 3),
                    bias=(64,), act="relu", arch="sm_80")
    (step,) = entry.steps
    assert (step["problem"]["P"], step["problem"]["Q"]) == (112, 112)
    assert [v.impl for v in entry.variants] == ["cutlass2x_implicit_gemm", "generic_direct_conv"]
    params = dict(entry.variants[0].params)
    assert params["alignments"] == {"a": 8, "b": 8, "d": 8} and params["pad_channels"] == 8
    assert params["iterator"] == "fixed_channels" and params["tile"] == [64, 64, 32]
    (unit,) = unit_texts(gm)
    assert "cutlass::conv::IteratorAlgorithm::kFixedChannels" in unit and "cutlass::arch::Sm80" in unit
    # scratch: the padded activation and filter, 256-byte rounded
    assert entry.scratch_bytes == 2 * 224 * 224 * 8 * 2 + 64 * 7 * 7 * 8 * 2
    wrapper = next(s.text for s in gm.sources if s.path == entry.source_file)
    assert "t.A = ws_base + off_pad_a; t.lda = 8;" in wrapper and "t.B = ws_base + off_pad_b; t.C = 8;" in wrapper
    pads = [line.strip() for line in wrapper.splitlines() if "conv_f16_f16_f16_pad8_run(" in line and "grc =" in line]
    assert pads == ["grc = byocc::generic::conv_f16_f16_f16_pad8_run(c.A, int64_t(2) * int64_t(224) * int64_t(224), "
                    "3, ws_base + off_pad_a, dev.sm_count, stream);",
                    "grc = byocc::generic::conv_f16_f16_f16_pad8_run(c.B, 3136, 3, ws_base + off_pad_b, "
                    "dev.sm_count, stream);"]
    # the pad runs only once the unit accepted the padded problem, before it
    assert wrapper.index("_can_implement(t)") < wrapper.index("pad8_run(c.A") < wrapper.index("_run(byocc::conv_group(t")
    generic = next(s.text for s in gm.sources if s.path == "src/kernels/generic_conv_f16_f16_f16.cu")
    assert "int conv_f16_f16_f16_pad8_run(const void* src, int64_t rows, int64_t c, void* dst" in generic
    # f32, or two groups: no padding (the alignment tiers as before)
    _, entry = gen(xs=(1, 16, 16, 6), ws=(8, 3, 3, 3), padding=PAD1, groups=2, bias=(8,))
    assert "pad_channels" not in dict(entry.variants[0].params)


def test_sm90_conv_tier_and_its_unit():
    """groups == 1, f16, C and K multiples of 8 and C of a k-tile: the CUTLASS 3.x unit comes
    first, only on compute capability 9; its shape follows tiles.select_conv_sm90."""
    gm, entry = gen(xs=(32, 28, 28, 128), ws=(256, 3, 3, 128), padding=PAD1, bias=(256,), act="relu")
    v = entry.variants[0]
    assert (v.arch, v.impl) == ("sm_90a", "cutlass3x_implicit_gemm")
    assert dict(v.params)["tile"] == [128, 128, 64] and dict(v.params)["cluster"] == [2, 1, 1]
    assert dict(v.params)["stages"] == "auto"
    (unit,) = unit_texts(gm, kind="sm90")
    assert "cutlass::conv::collective::CollectiveBuilder<" in unit
    assert "cutlass::conv::KernelImplicitTmaWarpSpecializedSm90>::CollectiveOp;" in unit
    assert "cutlass::conv::kernel::ConvUniversal<ProblemShape, CollectiveMainloop, CollectiveEpilogue>" in unit
    assert "cutlass::conv::device::ConvUniversalAdapter<Kernel>" in unit
    assert "using TileShape = cute::Shape<cute::_128, cute::_128, cute::Shape<cute::_64>>;" in unit
    assert "LinCombPerColBiasEltAct<\n    cutlass::epilogue::thread::ReLu," in unit
    assert "constexpr int kTileK = 64;" in unit and "a.C % kTileK == 0" in unit
    assert "cutlass::conv::collective::StageCountAutoCarveout<" in unit
    wrapper = next(s.text for s in gm.sources if s.path == entry.source_file)
    sm90_at = wrapper.index("if (!done && dev.major == 9) {  // cutlass3x_implicit_gemm")
    assert wrapper.index("#ifndef BYOCC_NO_SM90") < sm90_at < wrapper.index("if (!done) {  // cutlass2x_implicit_gemm")
    # a small batch-1 layer: 64-row tiles, one M tile -> no cluster (stride 2: a 1x1 stride-1
    # conv is a GEMM step)
    _, entry = gen(xs=(1, 14, 14, 512), ws=(2048, 1, 1, 512), strides=(2, 2), bias=(2048,), act="relu")
    params = dict(entry.variants[0].params)
    assert params["tile"] == [64, 128, 64] and params["cluster"] == [1, 1, 1] and params["stages"] == "auto"
    # a 1x1 C=64 layer at batch 32: short reduction, 2 stages
    gm, entry = gen(xs=(32, 112, 112, 64), ws=(64, 1, 1, 64), strides=(2, 2), bias=(64,), act="relu")
    assert dict(entry.variants[0].params)["stages"] == 2
    (unit,) = unit_texts(gm, kind="sm90")
    assert "    cutlass::conv::collective::StageCount<2>,\n" in unit and "shape  tile 128x64x64, cluster 2x1x1, 2 stages" in unit
    # C = 32: a 32-channel k-tile
    gm, entry = gen(xs=(1, 16, 16, 32), ws=(64, 3, 3, 32), padding=PAD1, bias=(64,), act="relu")
    assert dict(entry.variants[0].params)["tile"] == [64, 64, 32]


def test_strided_stem_runs_space_to_depth_on_sm90():
    """The 7x7/2 stem over 3 channels on sm_90a: A and B copied space-to-depth by 2 into
    16-channel rows (12 used), then the 3.x unit runs the stride-1, unpadded 4x4-tap problem
    over a 115x115 input with one 16-channel k-tile a tap; the padded 2.x unit stays the
    sm_80 variant, and the copies share scratch with its padded ones (one tier runs a call)."""
    gm, entry = gen(xs=(2, 224, 224, 3), ws=(64, 7, 7, 3), strides=(2, 2), padding=(3, 3, 3, 3),
                    bias=(64,), act="relu")
    assert [v.impl for v in entry.variants] == ["cutlass3x_implicit_gemm", "cutlass2x_implicit_gemm",
                                                "generic_direct_conv"]
    params = dict(entry.variants[0].params)
    assert params["space_to_depth"] == 2 and params["pad_channels"] == 16 and params["tile"][2] == 16
    assert dict(entry.variants[1].params)["pad_channels"] == 8
    # scratch: the larger copies of each (the 8-channel A of 224x224 beats the 16-channel of
    # 115x115; the 4x4x16 filter beats the 7x7x8 one)
    assert entry.scratch_bytes == 2 * 224 * 224 * 8 * 2 + max(64 * 7 * 7 * 8 * 2, 64 * 4 * 4 * 16 * 2)
    wrapper = next(s.text for s in gm.sources if s.path == entry.source_file)
    assert "t.H = 115; t.W = 115; t.R = 4; t.S = 4;" in wrapper
    assert "t.pad_h = 0; t.pad_w = 0; t.stride_h = 1; t.stride_w = 1;" in wrapper
    assert ("grc = byocc::generic::conv_f16_f16_f16_s2d16_run(c.A, c.N, c.H, c.W, 3, 2, c.pad_h, c.pad_w, t.H, t.W, "
            "ws_base + off_pad_a, dev.sm_count, stream);") in wrapper
    assert "space-to-depth by 2 in scratch (115x115 input, 4x4 taps of 16 channels" in wrapper
    sm90 = wrapper.index("if (!done && dev.major == 9) {")
    assert sm90 < wrapper.index("s2d16_run(c.A") < wrapper.index("pad8_run(c.A")
    # too many channels for 16 (C = 8 by 2: 32), stride 1, or dilation: no space-to-depth
    for kw in (dict(xs=(1, 16, 16, 8), ws=(16, 3, 3, 8)), dict(xs=(1, 16, 16, 3), ws=(16, 3, 3, 3), strides=(1, 1)),
               dict(xs=(1, 16, 16, 3), ws=(16, 3, 3, 3), dilation=(2, 2))):
        _, entry = gen(**{"strides": (2, 2), "padding": PAD1, "bias": (16,), **kw})
        assert all("space_to_depth" not in dict(v.params) for v in entry.variants), kw


def test_pointwise_conv_is_a_gemm_step():
    """A 1x1, stride-1, unpadded, ungrouped conv2d is the GEMM M = N*H*W, N = K, K = C with the
    OHWI weight as its (K, C) "tn" B: it runs on the GEMM family's persistent sm_90a kernels
    (CUTLASS refuses persistent schedules for conv), and says so in its header and record."""
    gm, entry = gen(xs=(32, 56, 56, 64), ws=(256, 1, 1, 64), bias=(1, 1, 1, 256), act="relu",
                    res=(32, 56, 56, 256), res_op="add", post="relu")
    (step,) = entry.steps
    assert step["kind"] == "gemm" and step["lowered_from"] == "conv2d" and step["b_layout"] == "tn"
    assert step["formula"] == "conv2d_1x1(x, w) -> + bias -> relu -> add residual -> relu"
    assert step["bias_class"] == "per_column" and step["residual_class"] == "full"
    v = entry.variants[0]
    assert v.arch == "sm_90a" and v.impl.startswith("cutlass3x_tma_ws_")
    assert not [s for s in gm.sources if s.path.startswith("src/kernels/conv_")]
    wrapper = next(s.text for s in gm.sources if s.path == entry.source_file)
    assert "conv2d 1x1 N=32 H=56 W=56 C=64 K=256, stride 1, no padding: one GEMM" in wrapper
    assert "GEMM M=56 N=256 K=64 batch=flatten, B tn" in wrapper
    # small M (batch 1, 7x7), where the GEMM family would split K: the conv unit (measured faster)
    _, entry = gen(xs=(1, 7, 7, 2048), ws=(512, 1, 1, 2048), bias=(512,), act="relu")
    assert entry.steps[0]["kind"] == "conv2d"
    _, entry = gen(xs=(1, 14, 14, 1024), ws=(256, 1, 1, 1024), bias=(256,), act="relu")
    assert entry.steps[0]["kind"] == "gemm" and "split_k" not in dict(entry.variants[0].params)
    # stride 2, padding, groups: the conv tiers
    for kw in (dict(strides=(2, 2)), dict(padding=PAD1), dict(groups=2, ws=(64, 1, 1, 16))):
        _, entry = gen(**{"xs": (1, 8, 8, 32), "ws": (64, 1, 1, 32), **kw})
        assert entry.steps[0]["kind"] == "conv2d", kw
    # f32: the GEMM family's TF32 path (B already K-major, no transposition into scratch)
    _, entry = gen(xs=(1, 8, 8, 16), ws=(16, 1, 1, 16), dtype="float32")
    assert entry.steps[0]["kind"] == "gemm" and entry.scratch_bytes == 0


@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ not installed")
def test_sm90_unit_end_padding_gives_p_and_q(tmp_path):
    """CUTLASS 3.x derives P from both paddings; the unit passes the least bottom padding that
    gives the step's P (0 when a smaller stride remainder already does, -1 when no
    non-negative padding does: the unit refuses). Its C++ function, compiled on the host,
    against CUTLASS's formula for every small problem."""
    gm, _ = gen(xs=(1, 8, 8, 64), ws=(64, 3, 3, 64), padding=PAD1, bias=(64,), act="relu")
    (unit,) = unit_texts(gm, kind="sm90")
    start = unit.index("int64_t end_padding(")
    func = unit[start:unit.index("\n}\n", start) + 3]
    main = "#include <stdint.h>\n#include <stdio.h>\n" + func + """
int main() {
  for (int in = 1; in <= 12; ++in) for (int f = 1; f <= 4; ++f) for (int pad = 0; pad <= 3; ++pad)
  for (int st = 1; st <= 3; ++st) for (int dil = 1; dil <= 2; ++dil) for (int end = 0; end <= 4; ++end) {
    const int span = in + pad + end - dil * (f - 1) - 1;
    if (span < 0) continue;
    const int out = span / st + 1;
    const int64_t e = end_padding(in, f, pad, st, dil, out);
    const int got = e < 0 ? -1 : (int)((in + pad + e - dil * (f - 1) - 1) / st + 1);
    if (e < 0 || e > end || got != out) { printf("in=%d f=%d pad=%d st=%d dil=%d end=%d: %lld\\n", in, f, pad, st, dil,
                                                   end, (long long)e); return 1; }
  }
  // P = 3 from H = 8, R = 1, stride 2, no padding needs a negative bottom padding: refused
  return end_padding(8, 1, 0, 2, 1, 3) == -1 ? 0 : 2;
}
"""
    (tmp_path / "t.cc").write_text(main)
    exe = tmp_path / "t"
    build = subprocess.run(["g++", "-O1", "-o", str(exe), str(tmp_path / "t.cc")], capture_output=True, text=True)
    assert build.returncode == 0, build.stderr
    done = subprocess.run([str(exe)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout


@pytest.mark.parametrize("kw", [dict(groups=2), dict(c=12), dict(k=20), dict(dtype="float32"),
                                dict(arch="sm_80"), dict(bias_shape=(1, 8, 1, 1))],
                         ids=["groups", "c12", "k20", "f32", "arch_sm80", "general_bias"])
def test_no_sm90_conv_tier(kw):
    """Two groups, C not a multiple of 16 channels, K not of 8, f32, --arch sm_80, or an
    epilogue the unit cannot fuse: no sm_90a variant (the sm_80 unit and the generic conv)."""
    c, k = kw.get("c", 64), kw.get("k", 64)
    g = kw.get("groups", 1)
    _, entry = gen(xs=(1, 8, 8, c), ws=(k, 3, 3, c // g), padding=PAD1, groups=g, dtype=kw.get("dtype", "float16"),
                   bias=kw.get("bias_shape", (k,)), act="relu", arch=kw.get("arch"))
    assert "sm_90a" not in {v.arch for v in entry.variants}
    assert entry.variants[-1].impl == "generic_direct_conv"


@pytest.mark.parametrize("name,kw,formula", PATTERNS, ids=[p[0] for p in PATTERNS])
def test_every_conv_pattern_fuses_in_the_sm90_unit(name, kw, formula):
    gm, _ = gen(xs=(2, 16, 16, 64), ws=(64, 3, 3, 64), padding=PAD1,
                **{k: ((2, 16, 16, 64) if k == "res" else v) for k, v in kw.items()})
    (unit,) = unit_texts(gm, kind="sm90")
    assert f"//   {formula.replace('acc', 'acc[n,p,q,k]')}\n" in unit
    if "residual" in name:
        # the full residual is the epilogue's C (im2col-mode TMA, beta = 1 or an EVT source fetch)
        assert "using ElementC = cutlass::half_t;" in unit and "static_cast<ElementC const*>(a.source)" in unit
        assert ("PerColResAddPerColBiasEltAct" in unit) == name.endswith("_residual_add")
    else:
        assert "using ElementC = void;" in unit
    if "bias" in kw and "residual" in name and "PerColResAddPerColBiasEltAct" not in unit:
        assert "evt::Sm90RowBroadcast<0, TileShape, ElementD" in unit
        assert "{static_cast<ElementD const*>(a.bias), ElementD(0), {cute::_0{}, cute::_1{}, 0}},  // bias" in unit


def test_sm90_conv_tile_rule():
    """tiles.select_conv_sm90 on the ResNet-50 shapes: the branches its docstring measures."""
    from byocc.backends.cutlass.tiles import select_conv_sm90

    # short reductions (<= 4 k-tiles, the memory-bound 1x1 layers) filling a wave: 128x64, 2 stages
    assert select_conv_sm90(32 * 56 * 56, 64, 64, 64) == ((128, 64, 64), (2, 1, 1), 2)
    assert select_conv_sm90(32 * 14 * 14, 1024, 256, 256) == ((128, 64, 64), (2, 1, 1), 2)
    # longer reductions: 128x128 with every stage that fits when it fills a wave, else 64x128;
    # tiles <= 64x128 take 4 stages when the grid fills a wave (a second CTA per SM)
    assert select_conv_sm90(32 * 28 * 28, 128, 1152, 128) == ((128, 128, 64), (2, 1, 1), 0)
    assert select_conv_sm90(32 * 14 * 14, 256, 2304, 256) == ((64, 128, 64), (2, 1, 1), 4)  # 98 tiles of 128
    assert select_conv_sm90(32 * 56 * 56, 64, 576, 64) == ((128, 64, 64), (2, 1, 1), 4)  # 64 output channels
    assert select_conv_sm90(32 * 7 * 7, 512, 4608, 512) == ((64, 128, 64), (2, 1, 1), 0)  # 100 CTAs
    # batch 1: under a wave, every stage that fits; the 1x1 C=64 layer is no short-reduction case
    assert select_conv_sm90(56 * 56, 64, 64, 64) == ((64, 64, 64), (2, 1, 1), 0)
    assert select_conv_sm90(49, 2048, 512, 512) == ((64, 128, 64), (1, 1, 1), 0)  # one M tile: no cluster
    # symbolic batch: 128-row tiles; k-tile from the channels (0: none fits)
    assert select_conv_sm90(None, 256, 2304, 256) == ((128, 128, 64), (2, 1, 1), 0)
    assert select_conv_sm90(None, 256, 64, 64) == ((128, 64, 64), (2, 1, 1), 2)
    assert select_conv_sm90(4096, 64, 9 * 48, 48)[0][2] == 16
    assert select_conv_sm90(4096, 64, 9 * 8, 8)[0][2] == 0


@pytest.mark.parametrize("c,k,align_ab,align_d", [(32, 64, 8, 8), (12, 20, 4, 4), (10, 10, 2, 2), (6, 10, 8, 2),
                                                   (5, 45, 8, 1)])
def test_alignment_tiers_follow_c_and_k(c, k, align_ab, align_d):
    """The sm_80 unit's A/B tier follows C, D's K; C < 8 (f16) is padded to 8 channels."""
    _, entry = gen(xs=(1, 8, 8, c), ws=(k, 3, 3, c), padding=PAD1, bias=(k,), arch="sm_80")
    assert dict(entry.variants[0].params)["alignments"] == {"a": align_ab, "b": align_ab, "d": align_d}


def test_f32_is_tf32_at_alignment_4_and_f32_output_of_f16():
    gm, entry = gen(xs=(1, 8, 8, 16), ws=(16, 1, 1, 16), strides=(2, 2), dtype="float32", bias=(16,), act="relu")
    (unit,) = unit_texts(gm)
    assert "using ElementA = float;" in unit and "GemmShape<16, 8, 8>" in unit and "(TF32 tensor-core math)" in unit
    assert dict(entry.variants[0].params)["alignments"]["a"] == 4
    gm, entry = gen(xs=(1, 8, 8, 16), ws=(16, 1, 1, 16), strides=(2, 2), out_dtype="float32")
    (unit,) = unit_texts(gm)
    assert "using ElementA = cutlass::half_t;" in unit and "using ElementD = float;" in unit
    # odd channels in f32: no CUTLASS tier (alignment 1 is not built for f32)
    _, entry = gen(xs=(1, 8, 8, 3), ws=(8, 3, 3, 3), dtype="float32", padding=PAD1)
    assert [v.impl for v in entry.variants] == ["generic_direct_conv"]


def test_stride_padding_dilation_give_p_and_q():
    _, entry = gen(xs=(1, 15, 17, 8), ws=(16, 3, 5, 8), strides=(2, 3), padding=(1, 2, 0, 3), dilation=(2, 1))
    problem = entry.steps[0]["problem"]
    # P = (15 + 1 + 0 - 2*2 - 1) // 2 + 1 = 6; Q = (17 + 2 + 3 - 4 - 1) // 3 + 1 = 6
    assert (problem["P"], problem["Q"]) == (6, 6)
    assert problem["padding"] == [1, 2, 0, 3] and problem["strides"] == [2, 3] and problem["dilation"] == [2, 1]
    wrapper = generate(conv_module(xs=(1, 15, 17, 8), ws=(16, 3, 5, 8), strides=(2, 3), padding=(1, 2, 0, 3),
                                   dilation=(2, 1))).sources
    text = next(s.text for s in wrapper if s.path.startswith("src/funcs/"))
    assert "c.pad_h = 1; c.pad_w = 2;" in text and "c.stride_h = 2; c.stride_w = 3;" in text
    assert "c.dilation_h = 2; c.dilation_w = 1;" in text


def test_large_filters_use_the_analytic_iterator():
    gm, _ = gen(xs=(1, 40, 40, 8), ws=(8, 33, 3, 8))
    (unit,) = unit_texts(gm)
    assert "IteratorAlgorithm::kAnalytic" in unit


def test_general_bias_goes_through_the_accumulator_and_generic_epilogue():
    gm, entry = gen(xs=(1, 8, 8, 16), ws=(16, 3, 3, 16), padding=PAD1, bias=(1, 8, 1, 1), act="relu")
    (step,) = entry.steps
    assert step["bias_class"] == "general"
    assert dict(entry.variants[0].params)["epilogue"] == "generic kernel"
    assert entry.scratch_bytes == 8 * 8 * 16 * 4
    assert any(s.path == "src/kernels/generic_epilogue_f32_f16.cu" for s in gm.sources)


def test_full_bias_is_the_c_operand():
    gm, entry = gen(xs=(1, 8, 8, 16), ws=(16, 3, 3, 16), padding=PAD1, bias=(1, 8, 8, 16))
    assert entry.steps[0]["bias_class"] == "full"
    (unit,) = unit_texts(gm, kind="sm80")
    assert "//   D = acc[n,p,q,k] + C\n" in unit


def test_grouped_conv_is_planned_per_group():
    gm, entry = gen(xs=(1, 8, 8, 32), ws=(64, 3, 3, 16), padding=PAD1, groups=2, bias=(64,), act="relu")
    (step,) = entry.steps
    assert step["problem"]["groups"] == 2 and entry.attrs["groups"] == 2
    wrapper = next(s.text for s in gm.sources if s.path == entry.source_file)
    assert "c.C = 16; c.K = 32;" in wrapper and "c.lda = 32;" in wrapper and "c.ldd = 64;" in wrapper
    assert "for (int64_t grp = 0; grp < 2 && grc == BYOCC_OK; ++grp)" in wrapper
    assert "byocc::generic::conv_f16_f16_f16_run(c, 2, e, stream)" in wrapper
    # C/groups = 4 sets the A/B tier, K/groups the D tier
    _, entry = gen(xs=(1, 8, 8, 8), ws=(36, 3, 3, 4), padding=PAD1, groups=2)
    assert dict(entry.variants[0].params)["alignments"] == {"a": 4, "b": 4, "d": 2}
    # fewer than 16 output channels per group: no per-group launches, the direct conv (one launch)
    _, entry = gen(xs=(1, 8, 8, 128), ws=(128, 3, 3, 4), padding=PAD1, groups=32, bias=(128,), act="relu")
    assert [v.impl for v in entry.variants] == ["generic_direct_conv"]


def test_depthwise_conv_is_rejected_by_the_pattern_check():
    part = partitioned(conv_module(xs=(1, 8, 8, 32), ws=(32, 3, 3, 1), padding=PAD1, groups=32))
    assert not any(getattr(f, "attrs", {}).get("Codegen") == "cutlass" for f in part.functions.values())


def test_output_is_deterministic_and_units_are_shared():
    a = generate(conv_module(xs=X, ws=W, padding=PAD1, bias=(64,), act="relu"))
    b = generate(conv_module(xs=X, ws=W, padding=PAD1, bias=(64,), act="relu"))
    assert [(s.path, s.text) for s in a.sources] == [(s.path, s.text) for s in b.sources]
    merged = generate(conv_module(xs=X, ws=W, padding=PAD1, bias=(64,), act="relu"), path="merge")
    assert set(unit_texts(a)) == set(unit_texts(merged))


@pytest.mark.parametrize("path", ["annotate", "merge"])
def test_samples_write_code(tmp_path, path):
    from click.testing import CliRunner

    from byocc.cli import cli

    def run(*args):
        return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)

    out = tmp_path / "cnn"
    done = run("partition", SAMPLES / "small_cnn.onnx", "--layout", "NHWC", "--fold-batch-norm",
               "--backend", "cutlass", "--path", path, "-o", out)
    assert done.exit_code == 0, done.output
    assert list((out / "src" / "kernels").glob("conv_*.cu"))
    out2 = tmp_path / "relax"
    done = run("partition", SAMPLES / "conv2d_nhwc_fp16.relax", "--backend", "cutlass", "--path", path, "-o", out2)
    assert done.exit_code == 0, done.output
    assert (out2 / "src" / "byocc_conv.h").is_file()


# --------------------------------------------------------------------------- on the host
_FAKE_RUNTIME_DEVICE_INFO = """int device_info(int device, DeviceInfo* out) {
  (void)device;
  out->major = 9;
  out->minor = 0;
  out->sm_count = 132;
  return BYOCC_OK;
}
"""


def _fake_conv_unit(cfg) -> str:
    """A host implementation of a conv unit's contract (byocc_conv.h): ONE group per call,
    channel strides lda/lds/ldd, as CUTLASS's ImplicitGemmConvolution with groups = 1."""
    from byocc.backends.cuda.generic import ctype

    ep = cfg.epilogue
    ta, tb, td = ctype(cfg.dtype_a), ctype(cfg.dtype_b), ctype(cfg.dtype_d)
    acts = {None: "v", "relu": "(v < 0 ? C(0) : v)", "silu": "v * (C(0.5) * (tanhf(C(0.5) * v) + C(1)))"}
    lines = [f"// fake {cfg.path}: {ep.formula}", "namespace byocc {",
             f"bool {cfg.prefix}_can_implement(const ConvArgs&) {{ return getenv(\"FAKE_NO_CUTLASS\") == nullptr; }}",
             f"uint64_t {cfg.prefix}_workspace_bytes(const ConvArgs&) {{ return 0; }}",
             f"int {cfg.prefix}_run(const ConvArgs& a, void*, uint64_t, cudaStream_t) {{",
             f'  fprintf(stderr, "ran {cfg.prefix}\\n");',
             f"  using C = typename generic::Num<{td}>::C;",
             "  for (int64_t n = 0; n < a.N; ++n) for (int64_t p = 0; p < a.P; ++p) for (int64_t q = 0; q < a.Q; ++q)",
             "  for (int64_t k = 0; k < a.K; ++k) {",
             "    float acc = 0;",
             "    for (int64_t r = 0; r < a.R; ++r) for (int64_t s = 0; s < a.S; ++s) {",
             "      const int64_t h = p * a.stride_h - a.pad_h + r * a.dilation_h, w = q * a.stride_w - a.pad_w + s * a.dilation_w;",
             "      if (h < 0 || h >= a.H || w < 0 || w >= a.W) continue;",
             "      for (int64_t c = 0; c < a.C; ++c)",
             f"        acc += generic::to_acc(static_cast<const {ta}*>(a.A)[((n * a.H + h) * a.W + w) * a.lda + c]) *",
             f"               generic::to_acc(static_cast<const {tb}*>(a.B)[((k * a.R + r) * a.S + s) * a.C + c]);",
             "    }",
             "    const int64_t pix = (n * a.P + p) * a.Q + q;",
             "    C v = static_cast<C>(acc);"]
    if ep.bias:
        lines.append(f"    v += generic::Num<{td}>::load(static_cast<const {td}*>(a.bias)[k]);")
    if ep.source == "full" and ep.residual != "full":
        lines.append(f"    v += generic::Num<{td}>::load(static_cast<const {td}*>(a.source)[pix * a.lds + k]);")
    lines.append(f"    v = {acts[ep.act]};")
    if ep.residual:
        lines.append(f"    C rr = generic::Num<{td}>::load(static_cast<const {td}*>(a.source)[pix * a.lds + k]);")
        lines.append(f"    v = {'v + rr' if ep.residual_op == 'add' else 'v * rr'};")
    if ep.post:
        lines.append("    v = (v < 0 ? C(0) : v);")
    lines += [f"    static_cast<{td}*>(a.D)[pix * a.ldd + k] = generic::Num<{td}>::store(v);",
              "  }", "  return BYOCC_OK;", "}", "}  // namespace byocc"]
    return "\n".join(lines) + "\n"


_HOST_GENERIC = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "byocc_conv.cuh"
namespace byocc {
namespace generic {
template <typename TA, typename TB, typename TOut>
int host_conv(const ConvArgs& a, int64_t groups, const Epilogue& e) {
  fprintf(stderr, "ran generic conv\n");
  for (int64_t i = 0; i < a.N * a.P * a.Q * a.K * groups; ++i) conv_output<TA, TB, TOut>(a, groups, e, i);
  return BYOCC_OK;
}
template <typename T>
int host_pad8(const void* src, int64_t rows, int64_t c, void* dst) {
  fprintf(stderr, "ran pad8\n");
  memset(dst, 0, rows * 8 * sizeof(T));
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t k = 0; k < c; ++k) static_cast<T*>(dst)[i * 8 + k] = static_cast<const T*>(src)[i * c + k];
  return BYOCC_OK;
}
template <typename T>
int host_s2d16(const void* src, int64_t n, int64_t h, int64_t w, int64_t c, int64_t s, int64_t pad_t, int64_t pad_l,
               int64_t h2, int64_t w2, void* dst) {
  fprintf(stderr, "ran s2d16\n");
  if (s * s * c > 16) return BYOCC_E_INTERNAL;
  for (int64_t r = 0; r < n * h2 * w2; ++r)  // the device kernel's own row function
    space_to_depth_row<T, 16>(static_cast<const T*>(src), h, w, c, int(s), pad_t, pad_l, h2, w2, r, static_cast<T*>(dst));
  return BYOCC_OK;
}
""" + HOST_EPILOGUE + r"""}  // namespace generic
}  // namespace byocc
"""

def _conv_line(src: str, w: str, pad: int) -> str:
    return (f"R.nn.conv2d({src}, {w}, strides=[1, 1], padding=[{pad}, {pad}, {pad}, {pad}], dilation=[1, 1], "
            'groups=1, data_layout="NHWC", kernel_layout="OHWI", out_layout="NHWC", out_dtype=None)')


#: A ResNet-style block merged into one function: c3 = relu(conv(c2) + b + c1) is the last
#: use of c1, so c3 is written over c1 in scratch (docs/codegen.md#scratch).
RESIDUAL_BLOCK = f"""# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 6, 6, 16), dtype="float16"), w: R.Tensor((16, 3, 3, 16), dtype="float16"), b: R.Tensor((16,), dtype="float16")) -> R.Tensor((1, 6, 6, 16), dtype="float16"):
        with R.dataflow():
            c1 = R.nn.relu(R.add({_conv_line("x", "w", 1)}, b))
            c2 = R.nn.relu(R.add({_conv_line("c1", "w", 1)}, b))
            c3 = R.nn.relu(R.add(R.add({_conv_line("c2", "w", 1)}, b), c1))
            y = R.add({_conv_line("c3", "w", 1)}, b)
            R.output(y)
        return y
"""

HOST_CASES = [
    ("residual_in_place", RESIDUAL_BLOCK),
    ("grouped", dict(xs=(2, 6, 6, 8), ws=(32, 3, 3, 4), padding=PAD1, groups=2, bias=(32,), act="relu")),
    ("grouped_residual", dict(xs=(1, 5, 5, 12), ws=(6, 1, 3, 4), padding=(0, 1, 0, 1), groups=3, bias=(6,),
                              res=(1, 5, 5, 6), res_op="multiply", post="relu")),
    ("stride_dilation", dict(xs=(1, 9, 11, 8), ws=(8, 3, 3, 8), strides=(2, 1), padding=(2, 1, 0, 2),
                             dilation=(1, 2), bias=(1, 1, 1, 8), act="silu")),
    ("stem_c3", dict(xs=(1, 12, 12, 3), ws=(8, 7, 7, 3), strides=(2, 2), padding=(3, 3, 3, 3), bias=(8,),
                     act="relu")),
    # space-to-depth by 2 (sm_90a): odd sizes and asymmetric padding, a 4-channel stem, and
    # stride 1 (the 8-channel padding and the 2.x fixed-channels unit instead)
    ("stem_s2d_odd", dict(xs=(2, 11, 9, 3), ws=(16, 5, 3, 3), strides=(2, 2), padding=(2, 1, 1, 0), bias=(16,),
                          act="silu", res=(2, 5, 4, 16), res_op="add", post="relu")),
    ("stem_s2d_c4", dict(xs=(1, 8, 8, 4), ws=(8, 3, 3, 4), strides=(2, 2), padding=(1, 1, 1, 1), bias=(8,))),
    ("stem_c3_stride1", dict(xs=(1, 6, 6, 3), ws=(8, 3, 3, 3), padding=PAD1, bias=(8,), act="relu")),
    ("general_bias", dict(xs=(1, 8, 8, 8), ws=(8, 1, 1, 8), strides=(2, 2), bias=(1, 4, 1, 1), res=(8,),
                          res_op="add")),
    ("f32_residual_per_channel", dict(xs=(1, 6, 6, 4), ws=(8, 3, 3, 4), dtype="float32", padding=PAD1,
                                      bias=(8,), res=(8,), res_op="add", post="relu")),
]


def _host_build(tmp_path, cases):
    import numpy as np

    from byocc.backends.cuda.common import runtime_source
    from byocc.backends.cutlass.conv_plan import conv_step
    from byocc.backends.cutlass.conv_plan import plan_conv
    from byocc.backends.dtypes import DTYPES
    from byocc.backends.program import offloaded_program
    from byocc.runtime import Interpreter

    rng = np.random.default_rng(3)
    sources, cfgs, runs = {}, {}, []
    for k, (label, kw) in enumerate(cases):
        # a case is conv_module's arguments, or a module's text (merged into one function)
        part = partitioned(kw, path="merge") if isinstance(kw, str) else partitioned(conv_module(**kw))
        (gname, func), = [(n, f) for n, f in part.functions.items()
                          if getattr(f, "attrs", {}).get("Codegen") == "cutlass"]
        sym = f"{func.attrs['global_symbol']}_h{k}"
        func = func.with_attrs(global_symbol=sym)
        gm = codegen([(sym, func)], {}, {})[0]
        sources.update((s.path, s) for s in gm.sources)
        for call in offloaded_program(sym, func, {}).calls:
            for tier in plan_conv(conv_step(call.func), call, sym, {}).tiers:
                if tier.cfg is not None:
                    cfgs[tier.cfg.path] = tier.cfg
        inputs = [rng.uniform(-1, 1, [int(d) for d in p.struct_info.shape]).astype(p.struct_info.dtype)
                  for p in func.params]
        want = np.asarray(Interpreter(part).run(inputs, entry=gname))
        runs.append((label, gm.entries[0], inputs, want))
    for src in [s for s in common_sources() if s.path.endswith(".h")] + list(sources.values()):
        p = tmp_path / src.path
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(src.text)
    runtime = runtime_source()
    start = runtime.index("int device_info(int device, DeviceInfo* out) {")
    end = runtime.index("\n}\n", start) + 3
    (tmp_path / "runtime_host.cu").write_text("#include <stdlib.h>\n" + runtime[:start] + _FAKE_RUNTIME_DEVICE_INFO
                                              + runtime[end:])
    t = {row.short: row.ctype for row in DTYPES.values()}
    fakes = [_HOST_GENERIC] + [_fake_conv_unit(cfg) for cfg in cfgs.values()]
    for path in sources:
        name = Path(path).stem
        if name.startswith("generic_conv_"):
            _, _, a, b, d = name.split("_")
            fakes.append(f"namespace byocc {{ namespace generic {{ int {name.removeprefix('generic_')}_run("
                         f"const ConvArgs& c, int64_t g, const Epilogue& e, cudaStream_t) {{ "
                         f"return host_conv<{t[a]}, {t[b]}, {t[d]}>(c, g, e); }} }} }}")
            fakes.append(f"namespace byocc {{ namespace generic {{ int {name.removeprefix('generic_')}_pad8_run("
                         f"const void* s, int64_t rows, int64_t c, void* d, int, cudaStream_t) {{ "
                         f"return host_pad8<{t[a]}>(s, rows, c, d); }} }} }}")
            fakes.append(f"namespace byocc {{ namespace generic {{ int {name.removeprefix('generic_')}_s2d16_run("
                         "const void* s, int64_t n, int64_t h, int64_t w, int64_t c, int64_t st, int64_t pt, "
                         "int64_t pl, int64_t h2, int64_t w2, void* d, int, cudaStream_t) { "
                         f"return host_s2d16<{t[a]}>(s, n, h, w, c, st, pt, pl, h2, w2, d); }} }} }}")
        elif name.startswith("generic_epilogue_"):
            _, _, s, d = name.split("_")
            fakes.append(f"namespace byocc {{ namespace generic {{ int {name.removeprefix('generic_')}_run("
                         f"const Operand& src, const Epilogue& e, void* out, int, cudaStream_t) {{ "
                         f"return host_epilogue<{t[s]}, {t[d]}>(src, e, out); }} }} }}")
    (tmp_path / "fakes.cu").write_text("\n".join(fakes) + "\n")
    main = ["#include <stdio.h>", "#include <stdlib.h>", '#include "byocc_internal.h"', "",
            "static void* load(const char* path, size_t bytes) {",
            "  void* p = aligned_alloc(256, (bytes + 255) / 256 * 256 + 256);",
            '  FILE* f = fopen(path, "rb"); if (!f || fread(p, 1, bytes, f) != bytes) exit(2);',
            "  fclose(f); return p;", "}"]
    for _, entry, _, _ in runs:
        main += [entry.c_signature, entry.scratch_signature]
    main += ["int main() {", "  int rc = 0;"]
    for k, (_, entry, inputs, want) in enumerate(runs):
        tensors = list(inputs) + [want]
        n = len(tensors)
        main += [f"  {{ DLTensor t[{n}]; const DLTensor* args[{n}]; static int64_t shapes[{n}][8];"]
        for j, arr in enumerate(tensors):
            if j < len(inputs):
                np.ascontiguousarray(arr).tofile(tmp_path / f"r{k}_{j}.bin")
                main.append(f'    void* d{j} = load("{tmp_path}/r{k}_{j}.bin", {arr.nbytes});')
            else:
                main.append(f"    void* d{j} = aligned_alloc(256, {(arr.nbytes + 255) // 256 * 256});")
            main += [f"    shapes[{j}][{ax}] = {d};" for ax, d in enumerate(arr.shape)]
            main += [f"    t[{j}] = DLTensor{{d{j}, {{kDLCUDA, 0}}, {arr.ndim}, {{2, {arr.dtype.itemsize * 8}, 1}}, "
                     f"shapes[{j}], nullptr, 0}}; args[{j}] = &t[{j}];"]
        main += [f"    uint64_t need = byocc_scratch_bytes_{entry.symbol}(args, {n});",
                 "    void* scratch = need ? aligned_alloc(256, (need + 255) / 256 * 256) : nullptr;",
                 f"    int r = {entry.symbol}(args, {n}, scratch, need, nullptr);",
                 f'    if (r != 0) {{ printf("case {k} failed %d: %s\\n", r, byocc_last_error()); rc = 1; }}',
                 f'    FILE* f = fopen("{tmp_path}/r{k}_out.bin", "wb"); fwrite(d{n - 1}, 1, {want.nbytes}, f); fclose(f);',
                 "  }"]
    main += ["  return rc;", "}"]
    (tmp_path / "main.cu").write_text("\n".join(main) + "\n")
    units = [tmp_path / "main.cu", tmp_path / "fakes.cu", tmp_path / "runtime_host.cu"]
    units += [tmp_path / e.source_file for _, e, _, _ in runs]
    exe = tmp_path / "host_run"
    proc = subprocess.run([NVCC, "-std=c++17", "-O1", "-I", str(tmp_path / "src"), *map(str, units), "-o", str(exe)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-5000:]
    return exe, runs


def _check_outputs(tmp_path, runs, what):
    import numpy as np

    failures = []
    for k, (label, _, _, want) in enumerate(runs):
        got = np.fromfile(tmp_path / f"r{k}_out.bin", dtype=want.dtype).reshape(want.shape).astype(np.float64)
        ref = want.astype(np.float64)
        scale = max(1.0, float(np.abs(ref).max()))
        if not np.allclose(got, ref, rtol=1e-2, atol=1e-2 * scale):
            failures.append(f"{label} ({what}): max |err| {np.abs(got - ref).max()}")
    assert not failures, "\n".join(failures)


@needs_nvcc
def test_tvm_defect_grouped_conv_is_computed_per_group(tmp_path):
    """TVM's CUTLASS codegen ignores ``groups`` (one dense launch over the whole tensors).
    byocc's wrapper launches the unit once per group over channel slices (full-tensor channel
    strides, pointers at the group's slice, the group's filter block), and its generic direct
    convolution handles every group: both must match the interpreter's grouped conv2d. Also
    checks strides, asymmetric padding, dilation, the C = 3 stem, operand classes and the
    accumulator + generic epilogue path, with the CUTLASS units faked on the host (one group
    per call, the contract of byocc_conv.h; the device reports compute capability 9, so the
    sm_90a tier runs where it exists; the stem's unit computes on the 8-channel copies the
    channel padding made) and with them refusing (generic only)."""
    exe, runs = _host_build(tmp_path, HOST_CASES)
    for no_cutlass in (False, True):
        env = dict(os.environ)
        if no_cutlass:
            env["FAKE_NO_CUTLASS"] = "1"
        proc = subprocess.run([str(exe)], capture_output=True, text=True, env=env)
        assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
        assert ("ran conv_" in proc.stderr) != no_cutlass
        if no_cutlass:
            assert "ran generic conv" in proc.stderr
        else:
            # two groups: the unit ran twice for the first case
            assert proc.stderr.count("ran conv_") >= 2 + 3
            assert proc.stderr.count("ran pad8") == 2  # the stride-1 stem's activation and filter
            assert proc.stderr.count("ran s2d16") == 2 * 3  # the strided stems' activations and filters
        _check_outputs(tmp_path, runs, "generic only" if no_cutlass else "cutlass units")


@needs_nvcc
def test_generic_direct_convolution_compiles_for_the_device(tmp_path):
    gm, _ = gen(xs=(1, 8, 8, 8), ws=(16, 3, 3, 4), padding=PAD1, groups=2, bias=(16,), act="silu")
    for src in list(common_sources()) + list(gm.sources):
        p = tmp_path / src.path
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(src.text)
    for rel in [s.path for s in gm.sources if s.unit == "light"]:
        proc = subprocess.run([NVCC, "-std=c++17", "-gencode=arch=compute_80,code=sm_80", "-Werror", "all-warnings",
                               "-I", str(tmp_path / "src"), "-c", str(tmp_path / rel), "-o", str(tmp_path / "x.o")],
                              capture_output=True, text=True)
        assert proc.returncode == 0, f"{rel}:\n{proc.stderr[-4000:]}"


def _compile_conv_unit(tmp_path: Path, gm, unit_kind: str) -> None:
    """Writes ``gm``'s sources, compiles its one conv unit of ``unit_kind`` with the build's
    flags for that arch, and checks the object defines the unit's entry point."""
    from byocc.backends.toolchain import NVCC_ARCH_FLAGS
    from byocc.backends.toolchain import NVCC_COMMON_FLAGS
    from byocc.backends.toolchain import cutlass_include_dirs

    for src in list(common_sources()) + list(gm.sources):
        p = tmp_path / src.path
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(src.text)
    (unit,) = [s for s in gm.sources if s.path.startswith("src/kernels/conv_") and s.unit == unit_kind]
    cmd = [NVCC, *NVCC_COMMON_FLAGS, *NVCC_ARCH_FLAGS[unit_kind], *(f"-I{d}" for d in cutlass_include_dirs()),
           f"-I{tmp_path / 'src'}", "-c", str(tmp_path / unit.path), "-o", str(tmp_path / "k.o")]
    lock = "/tmp/byocc_nvcc_heavy.lock"
    if shutil.which("flock") and os.access("/tmp", os.W_OK):
        cmd = ["flock", lock, *cmd]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-4000:]
    symbols = subprocess.run(["nm", "-C", str(tmp_path / "k.o")], capture_output=True, text=True)
    if symbols.returncode == 0:
        prefix = Path(unit.path).stem
        assert f"byocc::{prefix}_run(byocc::ConvArgs const&" in symbols.stdout


# --------------------------------------------------------------------------- one real compile
@needs_cutlass_library
@pytest.mark.skipif(NVCC is None, reason="nvcc not found: the sm_90a conv compile test needs the CUDA toolkit")
def test_sm90_conv_unit_compiles(tmp_path: Path):
    """Compiles the sm_90a unit of samples/conv2d_nhwc_fp16.relax (CUTLASS 3.x implicit GEMM,
    bias + relu) with the build's sm_90a flags (~90 s)."""
    gm = generate((SAMPLES / "conv2d_nhwc_fp16.relax").read_text())
    _compile_conv_unit(tmp_path, gm, "sm90")


@needs_cutlass_library
@pytest.mark.skipif(NVCC is None, reason="nvcc not found: the sm_80 conv compile test needs the CUDA toolkit")
def test_sm80_conv_unit_compiles(tmp_path: Path):
    """Compiles the residual conv unit of the ResNet bottleneck (f16, bias + add + relu,
    DefaultConv2dFpropWithBroadcast) with the build's sm_80 flags (~1 min)."""
    gm, _ = gen(xs=(1, 14, 14, 64), ws=(64, 3, 3, 64), padding=PAD1, bias=(64,), res=(1, 14, 14, 64),
                post="relu")
    _compile_conv_unit(tmp_path, gm, "sm80")
