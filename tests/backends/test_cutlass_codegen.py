"""The CUTLASS codegen's GEMM steps (spec/backends.md 7.1-7.6, 16): problem mapping, variants for
aligned and unaligned shapes, operand classes, dtypes, scratch, errors, determinism; the light
units (wrapper, generic kernels) compiled and linked with nvcc."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from byocc.backends import get_patterns_with_prefix
from byocc.backends.codegen import CodegenError
from byocc.backends.cuda.common import common_sources
from byocc.backends.cutlass.codegen import codegen
from byocc.text import parse_module
from byocc.text import read_file
from byocc.transform import partition

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "samples"
NVCC = shutil.which("nvcc")
needs_nvcc = pytest.mark.skipif(NVCC is None, reason="nvcc not installed")


def generate(mod, path="annotate", patterns=None):
    out = partition(mod, patterns or get_patterns_with_prefix("cutlass"), path=path, run_codegen=True,
                    codegens={"cutlass": codegen})
    mods = list(out.attrs.get("external_mods", ()))
    assert len(mods) == 1
    return mods[0]


def shape(s) -> str:
    inner = ", ".join(repr(v) if isinstance(v, str) else str(v) for v in s)
    return f"({inner},)" if len(s) == 1 else f"({inner})"


def matmul_module(xs, ws, dtype="float16", trans=False, bias=None, act=None, res=None, res_op="add",
                  post=None, out_dtype=None, conv=False) -> str:
    """``out = post(res_op(act(matmul(x, [permute_dims](w)) + bias), r))``, stages optional;
    ``conv``: the root is a 1x1 NHWC x OHWI ``conv2d(x, w)`` instead (``ws`` = (K, 1, 1, C))."""
    od = out_dtype or dtype
    params = [f'x: R.Tensor({shape(xs)}, dtype="{dtype}")', f'w: R.Tensor({shape(ws)}, dtype="{dtype}")']
    body = []
    wv = "w"
    if trans:
        nd = len(ws)
        axes = list(range(nd - 2)) + [nd - 1, nd - 2] if trans is True else list(trans)
        body.append(f"wt = R.permute_dims(w, axes={axes})")
        wv = "wt"
    if conv:
        body.append('y = R.nn.conv2d(x, w, strides=[1, 1], padding=[0, 0, 0, 0], dilation=[1, 1], groups=1, '
                    'data_layout="NHWC", kernel_layout="OHWI", out_layout="NHWC", out_dtype=None)')
    else:
        body.append(f"y = R.matmul(x, {wv}" + (f', out_dtype="{out_dtype}")' if out_dtype else ")"))
    cur = "y"
    if bias is not None:
        params.append(f'b: R.Tensor({shape(bias)}, dtype="{od}")')
        body.append(f"z = R.add({cur}, b)")
        cur = "z"
    if act:
        body.append(f"a = R.nn.{act}({cur})")
        cur = "a"
    if res is not None:
        params.append(f'r: R.Tensor({shape(res)}, dtype="{od}")')
        body.append(f"q = R.{res_op}({cur}, r)")
        cur = "q"
    if post:
        body.append(f"p = R.nn.relu({cur})")
        cur = "p"
    body.append(f"out = {cur}")
    lines = ["# from tvm.script import ir as I", "# from tvm.script import relax as R", "",
             "@I.ir_module", "class Module:", "    @R.function", f"    def main({', '.join(params)}):",
             "        with R.dataflow():"]
    lines += [f"            {b}" for b in body]
    lines += ["            R.output(out)", "        return out", ""]
    return "\n".join(lines)


def gen(**kw):
    gm = generate(parse_module(matmul_module(**kw)))
    (entry,) = gm.entries
    return gm, entry


def impls(entry):
    return [(v.arch, v.impl, dict(v.params).get("align"), dict(v.params).get("epilogue")) for v in entry.variants]


def wrapper_of(gm, entry) -> str:
    return next(s.text for s in gm.sources if s.path == entry.source_file)


def write(gm, folder: Path) -> None:
    for src in list(common_sources()) + list(gm.sources):
        p = folder / src.path
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(src.text)


def compile_light(folder: Path, gm, defines=(), link=False) -> None:
    """Compile the light units (wrapper, generic, elementwise, runtime) with -Werror; with
    ``link`` (and both CUTLASS tiers compiled out) link a shared library with no undefined
    symbol, which proves the wrapper's prototypes match the generic units."""
    objs = []
    light = [s.path for s in gm.sources if s.unit == "light"] + ["src/runtime.cu"]
    for rel in light:
        obj = folder / (Path(rel).name + ".o")
        cmd = [NVCC, "-std=c++17", "-O1", "-Xcompiler=-fPIC", "-Xcompiler=-fvisibility=hidden",
               "-gencode=arch=compute_80,code=sm_80", "-Werror", "all-warnings", "-I", str(folder / "src"),
               *defines, "-c", str(folder / rel), "-o", str(obj)]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        assert proc.returncode == 0, f"{rel}:\n{proc.stderr[-4000:]}"
        objs.append(str(obj))
    if link:
        lib = folder / "libtest.so"
        proc = subprocess.run([NVCC, "-shared", "-cudart", "shared", "-Xlinker", "--no-undefined", "-o", str(lib),
                               *objs], capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr[-4000:]
        nm = subprocess.run(["nm", "-D", "--defined-only", str(lib)], capture_output=True, text=True).stdout
        for entry in gm.entries:
            assert f" T {entry.symbol}\n" in nm
            assert f" T byocc_scratch_bytes_{entry.symbol}\n" in nm


# --------------------------------------------------------------------------- variants
def test_aligned_shape_compiles_sm90_sm80_and_generic():
    gm, entry = gen(xs=(128, 256), ws=(256, 512), bias=(512,), act="relu")
    assert impls(entry) == [
        ("sm_90a", "cutlass3x_tma_ws_pingpong", 8, "fused"),
        ("sm_80", "cutlass2x_tensorop", 8, "fused"),
        ("sm_80", "generic_simt", 1, "generic (fused)"),
    ]
    units = {s.path: s.unit for s in gm.sources}
    assert sorted(units[p] for p in entry.kernel_sources) == ["light", "sm80", "sm90"]
    text = wrapper_of(gm, entry)
    sm90 = text.index("#ifndef BYOCC_NO_SM90\n      if (!done && dev.major == 9)")
    sm80 = text.index("#ifndef BYOCC_NO_SM80\n      if (!done && true)")
    generic = text.index("if (!done) {  // byocc generic SIMT GEMM")
    assert sm90 < sm80 < generic
    assert "byocc::aligned_to(g.A, 16)" in text and "g.lda % 8 == 0" in text
    assert entry.scratch_bytes == 0


def test_k6_gets_a_k_padded_tma_tier_and_alignment_2():
    gm, entry = gen(xs=(32, 6), ws=(6, 16))
    assert impls(entry) == [("sm_90a", "cutlass3x_tma_ws_pingpong", 8, "fused"),
                            ("sm_80", "cutlass2x_tensorop", 2, "fused"), ("sm_80", "generic_simt", 1, "generic (fused)")]
    assert dict(entry.variants[0].params)["pad_k"] == 8
    # A (32 x 8) and B (8 x 16) zero-padded into scratch, each region rounded to 256 bytes
    assert entry.scratch_bytes == 512 + 256
    text = wrapper_of(gm, entry)
    assert "pad_f16_run(byocc::data_of(args[0]), ws_base + off_pad_a, 1, int64_t(32), gk, int64_t(32), gkp" in text
    assert "pad_f16_run(byocc::data_of(args[1]), ws_base + off_pad_b, int64_t(1), gk, gn, gkp, gn" in text
    assert any(s.path == "src/byocc_gemm_aux.cuh" for s in gm.sources)


def test_unaligned_n_has_no_tma_tier():
    # N * 2 bytes not 16-byte aligned: D cannot be padded in place; the sm_80 tiers take it
    gm, entry = gen(xs=(32, 16), ws=(16, 6))
    assert [v.arch for v in entry.variants] == ["sm_80", "sm_80"]
    assert not any(s.unit == "sm90" for s in gm.sources)


def test_odd_k_runs_on_the_generic_gemm_only():
    gm, entry = gen(xs=(1, 1, 16, 15), ws=(3, 2, "a", 15, 2))
    assert impls(entry) == [("sm_80", "generic_simt", 1, "generic (fused)")]
    text = wrapper_of(gm, entry)
    # lhs batch product 1: L = the rhs batch, A batch stride 0
    assert "const int64_t gl = int64_t(3) * int64_t(2) * d.s0;" in text
    assert "g.batch_stride_a = int64_t(0);" in text


def test_symbolic_n_compiles_every_sm80_alignment():
    """A symbolic N: the sm_90a tiers are buckets of N (docs/codegen.md#m-buckets), then every
    sm_80 alignment tier (N's alignment is known at run time only), then the generic GEMM."""
    gm, entry = gen(xs=(64, 256), ws=(256, "n"), bias=("n",))
    got = [(v.impl, dict(v.params).get("align")) for v in entry.variants]
    sm90 = [v for v in entry.variants if v.arch == "sm_90a"]
    assert len(sm90) > 1 and all(dict(v.params)["align"] == 8 and "n_bucket" in dict(v.params) for v in sm90)
    assert got[len(sm90):] == [("cutlass2x_tensorop", 8), ("cutlass2x_tensorop", 4), ("cutlass2x_tensorop", 2),
                               ("generic_simt", 1)]


# --------------------------------------------------------------------------- problem mapping
def test_batch_mappings():
    _, e = gen(xs=(4, 128, 768), ws=(768, 3072), bias=(3072,))
    assert e.steps[0]["batch"] == "flatten"
    gm, e = gen(xs=(64, 256), ws=(6, 256, 512))
    assert e.steps[0]["batch"] == "broadcast_a"
    assert "g.batch_stride_a = int64_t(0); " not in wrapper_of(gm, e)  # only in the generic block
    gm, e = gen(xs=("a", 32, 8), ws=("a", 10, 8), trans=True)
    assert e.steps[0]["batch"] == "packed" and e.steps[0]["b_layout"] == "tn"
    text = wrapper_of(gm, e)
    assert "g.ldb = gk;" in text and "byocc::generic::gemm_f16_f16_f16_run(g, int64_t(1), g.ldb, e, stream)" in text


def test_non_swap_permute_is_materialised():
    gm, e = gen(xs=(3, 8), ws=(8, 2, 16), trans=(1, 0, 2))
    text = wrapper_of(gm, e)
    assert "B = permute_dims(rhs) materialised into scratch" in text
    assert "const int w_axes[3] = {1, 0, 2};" in text
    assert e.scratch_bytes == 512  # round_up(8 * 2 * 16 * 2 bytes)
    assert e.steps[0]["b_layout"] == "nn"


def test_int8_nn_transposes_b_for_tensor_cores():
    gm, e = gen(xs=(64, 256), ws=(256, 512), dtype="int8", out_dtype="int32")
    assert [v.impl for v in e.variants] == ["cutlass3x_tma_ws_pingpong", "cutlass2x_tensorop", "generic_simt"]
    assert e.scratch_bytes == 256 * 512
    text = wrapper_of(gm, e)
    assert "8-bit and TF32 tensor-core paths read K-major B" in text
    assert "gemm_s8_s8_s32_run" in text
    # K = 33 admits no CUTLASS tier: no transposition, no scratch
    gm, e = gen(xs=(16, 33), ws=(33, 8), dtype="int8", out_dtype="int32")
    assert [v.impl for v in e.variants] == ["generic_simt"] and e.scratch_bytes == 0


def test_f16_in_f32_out_and_tf32():
    _, e = gen(xs=(64, 256), ws=(256, 512), bias=(512,), out_dtype="float32")
    assert e.outputs[0].dtype == "float32" and impls(e)[0][3] == "fused"
    _, e = gen(xs=(64, 256), ws=(256, 512), dtype="float32", bias=(512,), act="relu")
    assert [dict(v.params).get("align") for v in e.variants] == [4, 4, 1]


# --------------------------------------------------------------------------- operand classes
@pytest.mark.parametrize("bias,cls,fused", [
    ((512,), "per_column", True),
    ((1, 512), "per_column", True),
    ((64, 512), "full", True),
    ((64, 1), "per_row", False),
])
def test_bias_classes(bias, cls, fused):
    gm, e = gen(xs=(64, 256), ws=(256, 512), bias=bias)
    assert e.steps[0]["bias_class"] == cls
    assert e.args[2].operand_class == cls
    assert (impls(e)[0][3] == "fused") == fused
    if not fused:
        # fp32 accumulator in scratch, then byocc's generic epilogue
        assert e.scratch_bytes == 64 * 512 * 4
        assert "generic epilogue: out = post(bin(act(acc + bias), residual))" in wrapper_of(gm, e)


def test_batched_bias_classes():
    _, e = gen(xs=(4, 64, 256), ws=(4, 256, 512), bias=(4, 64, 512))
    assert e.steps[0]["bias_class"] == "full" and impls(e)[0][3] == "fused"
    gm, e = gen(xs=(4, 64, 256), ws=(4, 256, 512), bias=(4, 1, 512))
    assert e.steps[0]["bias_class"] == "batched_row" and impls(e)[0][3] == "fused"
    assert "g.batch_stride_bias = gn;" in wrapper_of(gm, e)
    # a bias that broadcasts the result to a larger shape: generic epilogue from the accumulator
    gm, e = gen(xs=(64, 256), ws=(256, 512), bias=(4, 64, 512))
    assert e.outputs[0].shape == (4, 64, 512)
    assert all(v["epilogue"] != "fused" for v in e.steps[0]["variants"])


def test_residual_forms():
    _, e = gen(xs=(64, 256), ws=(256, 512), bias=(512,), res=(512,), res_op="multiply", post="relu")
    assert e.steps[0]["residual_class"] == "per_column" and impls(e)[0][3] == "fused"
    assert e.attrs["residual_op"] == "multiply" and e.attrs["post"] == "relu"
    _, e = gen(xs=(4, 16), ws=(16, 16), trans=True, bias=(16,), act="relu", res=(4, 16), post="relu")
    assert e.composites == ("cutlass.matmul_transposed_bias_relu_residual_add_relu",)
    assert impls(e)[0][3] == "fused"


def test_one_parameter_in_two_roles():
    text = matmul_module(xs=(16, 16), ws=(16, 16)).replace("out = y", "z = R.add(y, x)\n            out = z")
    gm = generate(parse_module(text))
    (e,) = gm.entries
    assert e.composites == ("cutlass.matmul_bias",) and e.num_args == 3
    assert [a.role for a in e.args] == ["lhs", "rhs"]
    assert e.steps[0]["bias_class"] == "full"


# --------------------------------------------------------------------------- functions, errors
def test_mlp_merge_and_annotate_share_kernel_units():
    mod = read_file(SAMPLES / "mlp_fp16.relax")
    merged = generate(mod, "merge")
    (e,) = merged.entries
    assert e.composites == ("cutlass.matmul_bias_relu", "cutlass.matmul_bias_relu", "cutlass.matmul_bias")
    assert e.num_args == 8
    assert e.scratch_bytes == 2 * 16 * 128 * 2  # two f16 (16, 128) intermediates
    assert "constexpr int32_t kNumArgs = 8;" in wrapper_of(merged, e)
    annotated = generate(mod, "annotate")
    assert len(annotated.entries) == 3
    kernel_units = sorted(s.path for s in annotated.sources if s.unit in ("sm90", "sm80"))
    assert kernel_units == sorted(s.path for s in merged.sources if s.unit in ("sm90", "sm80"))
    assert len(kernel_units) == 3  # two layers share the (K=64 / K=128, N=128) units


def test_a_composite_without_code_is_a_codegen_error():
    from byocc.dpl import is_op
    from byocc.dpl import wildcard

    mod = read_file(Path(__file__).resolve().parents[1] / "data" / "refused" / "softmax_fp16.relax")
    patterns = [("cutlass.softmax", is_op("relax.nn.softmax")(wildcard()))]
    with pytest.raises(CodegenError, match=r"function fused_relax_nn_softmax_cutlass, composite "
                       r"cutlass.softmax: the cutlass backend cannot generate code for this composite "
                       r"\(first unsupported op: relax.nn.softmax\)"):
        generate(mod, patterns=patterns)
    # a matmul with an op no kernel computes blames that op, not the matmul
    patterns = [("cutlass.mm_softmax", is_op("relax.nn.softmax")(is_op("relax.matmul")(wildcard(), wildcard())))]
    with pytest.raises(CodegenError, match=r"first unsupported op: relax.nn.softmax"):
        generate(mod, patterns=patterns)


def test_a_bare_transpose_is_an_index_mapped_elementwise_kernel():
    from byocc.dpl import is_op
    from byocc.dpl import wildcard

    mod = parse_module("""# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((16, 64), dtype="float16"), w: R.Tensor((64, 32), dtype="float16")) -> R.Tensor((32, 16), dtype="float16"):
        with R.dataflow():
            h: R.Tensor((16, 32), dtype="float16") = R.matmul(x, w, out_dtype=None)
            t: R.Tensor((32, 16), dtype="float16") = R.permute_dims(h, axes=[1, 0])
            y: R.Tensor((32, 16), dtype="float16") = R.nn.relu(t)
            R.output(y)
        return y
""")
    gm = generate(mod, patterns=[("cutlass.transpose", is_op("relax.permute_dims")(wildcard()))])
    [entry] = [e for e in gm.entries if e.composites == ("cutlass.transpose",)]
    assert entry.steps[0]["kind"] == "elementwise" and entry.steps[0]["index_mapped"] is True


def test_output_bytes_are_deterministic():
    mod = read_file(SAMPLES / "mlp_fp16.relax")
    a = generate(mod, "merge")
    b = generate(read_file(SAMPLES / "mlp_fp16.relax"), "merge")
    assert [(s.path, s.text) for s in a.sources] == [(s.path, s.text) for s in b.sources]
    assert [e.to_json() for e in a.entries] == [e.to_json() for e in b.entries]


def test_stream_k_reserves_a_workspace_bound():
    # 8 tiles of 64x128 are too few for any wave, and M > 64 (no split-K): C2 with the
    # stream-K scheduler
    _, e = gen(xs=(128, 4096), ws=(4096, 512), bias=(512,), act="gelu")
    v = e.variants[0]
    assert v.impl == "cutlass3x_tma_ws_cooperative" and dict(v.params)["stream_k"] is True
    # 132 (H200 SMs) >= 4 tiles of 128x128 fp32 partials + barriers, each rounded to 256 B
    assert e.scratch_bytes == 132 * 128 * 128 * 4 + 1280 + 256


def test_symbolic_scratch_is_an_expression():
    _, e = gen(xs=("a", 32, 8), ws=(8, 16), bias=(32, 1))
    assert e.scratch_bytes is None and e.scratch_expr == "round_up(a * 32 * 16 * 4)"


# --------------------------------------------------------------------------- compiled
@needs_nvcc
def test_mlp_light_units_compile_and_link(tmp_path):
    gm = generate(read_file(SAMPLES / "mlp_fp16.relax"), "merge")
    write(gm, tmp_path)
    compile_light(tmp_path, gm, defines=("-DBYOCC_NO_SM90", "-DBYOCC_NO_SM80"), link=True)


@needs_nvcc
def test_every_epilogue_path_compiles(tmp_path):
    """One wrapper per path: per-row bias (CUTLASS into the fp32 accumulator + generic
    epilogue), int8 nn (B transposed), materialised permute, symbolic packed batch, a
    broadcasting bias; with the CUTLASS declarations kept (no link)."""
    cases = [dict(xs=(64, 256), ws=(256, 512), bias=(64, 1), act="gelu"),
             dict(xs=(64, 256), ws=(256, 512), dtype="int8", out_dtype="int32"),
             dict(xs=(3, 8), ws=(8, 2, 16), trans=(1, 0, 2)),
             dict(xs=("a", 32, 8), ws=("a", 10, 8), trans=True, bias=(10,), act="gelu"),
             dict(xs=(64, 256), ws=(256, 512), bias=(4, 64, 512), res=(512,), res_op="multiply")]
    sources = {}
    for kw in cases:
        gm, _ = gen(**kw)
        for src in gm.sources:
            assert sources.setdefault(src.path, src).text == src.text  # shared units are identical
    from byocc.backends.codegen import GeneratedModule

    merged = GeneratedModule("cutlass", (), tuple(sources[p] for p in sorted(sources)))
    write(merged, tmp_path)
    compile_light(tmp_path, merged, link=False)


# --------------------------------------------------------------------------- the wrapper run on the host
# The generated wrappers run on the host against host implementations of the kernel-unit
# contracts: every CUTLASS unit (byocc_gemm.h, with the EpilogueSpec semantics documented in
# byocc.backends.cutlass.kernels) and the generic units (byocc_generic.cuh semantics). This
# checks the problem mapping, strides, batch handling, transposes, operand classes and
# scratch layout against the numpy interpreter; what it cannot check is CUTLASS itself.
_FAKE_RUNTIME_DEVICE_INFO = """int device_info(int device, DeviceInfo* out) {
  (void)device;
  const char* major = getenv("FAKE_MAJOR");
  out->major = major ? atoi(major) : 9;
  out->minor = 0;
  out->sm_count = 132;
  return BYOCC_OK;
}
"""

#: The generic epilogue on the host (the tests' stand-in for the epilogue kernel).
HOST_EPILOGUE = r"""
template <typename TSrc, typename TOut>
int host_epilogue(const Operand& src, const Epilogue& e, void* out) {
  using C = typename Num<TOut>::C;
  int64_t numel = 1;
  for (int a = 0; a < e.rank; ++a) numel *= e.shape[a];
  for (int64_t i = 0; i < numel; ++i)
    epilogue_store<TOut>(static_cast<C>(Num<TSrc>::load(static_cast<const TSrc*>(src.ptr)[offset_of(src, i, e.rank, e.shape)])), i, e, static_cast<TOut*>(out));
  return BYOCC_OK;
}
"""


_HOST_KERNELS = r"""
#include <stdio.h>
#include <stdlib.h>
#include "byocc_generic.cuh"
namespace byocc {
namespace generic {
template <typename TA, typename TB, typename TOut>
int host_gemm(const GemmArgs& g, int64_t sbk, int64_t sbn, const Epilogue& e) {
  using AccT = typename Acc<TA>::type;
  using C = typename Num<TOut>::C;
  for (int64_t l = 0; l < g.L; ++l)
    for (int64_t m = 0; m < g.M; ++m)
      for (int64_t n = 0; n < g.N; ++n) {
        AccT acc = 0;
        for (int64_t k = 0; k < g.K; ++k)
          acc += to_acc(static_cast<const TA*>(g.A)[l * g.batch_stride_a + m * g.lda + k]) *
                 to_acc(static_cast<const TB*>(g.B)[l * g.batch_stride_b + k * sbk + n * sbn]);
        epilogue_store<TOut>(static_cast<C>(acc), l * g.batch_stride_d + m * g.ldd + n, e, static_cast<TOut*>(g.D));
      }
  return BYOCC_OK;
}
""" + HOST_EPILOGUE + r"""}  // namespace generic
}  // namespace byocc
"""


def _fake_cutlass_unit(cfg) -> str:
    from byocc.backends.cuda.generic import ctype

    ep = cfg.epilogue
    ta, tb, td = ctype(cfg.dtype_a), ctype(cfg.dtype_b), ctype(cfg.dtype_d)
    b_index = ("k * g.ldb + n" if cfg.b_layout == "nn" else "n * g.ldb + k")
    acts = {None: "v", "relu": "(v < 0 ? C(0) : v)", "gelu": "C(0.5) * v * (C(1) + erff(v * C(0.70710678118654752440)))",
            "silu": "v * (C(0.5) * (tanhf(C(0.5) * v) + C(1)))"}
    lines = [f"// fake {cfg.path}: {ep.formula}", "namespace byocc {",
             f"bool {cfg.prefix}_can_implement(const GemmArgs&) {{ return getenv(\"FAKE_NO_CUTLASS\") == nullptr; }}",
             f"uint64_t {cfg.prefix}_workspace_bytes(const GemmArgs&) {{ return 0; }}",
             f"int {cfg.prefix}_run(const GemmArgs& g, void*, uint64_t, cudaStream_t) {{",
             '  if (getenv("FAKE_RUN_FAILS")) return fail(BYOCC_E_CUTLASS, "fake: initialize failed");',
             f'  fprintf(stderr, "ran {cfg.arch} {cfg.prefix}\\n");',
             f"  using C = typename generic::Num<{td}>::C;",
             "  for (int64_t l = 0; l < g.L; ++l) for (int64_t m = 0; m < g.M; ++m) for (int64_t n = 0; n < g.N; ++n) {",
             f"    typename generic::Acc<{ta}>::type acc = 0;",
             "    for (int64_t k = 0; k < g.K; ++k)",
             f"      acc += generic::to_acc(static_cast<const {ta}*>(g.A)[l * g.batch_stride_a + m * g.lda + k]) *",
             f"             generic::to_acc(static_cast<const {tb}*>(g.B)[l * g.batch_stride_b + {b_index}]);",
             "    C v = static_cast<C>(acc);"]
    if ep.bias:
        lines.append(f"    v += generic::Num<{td}>::load(static_cast<const {td}*>(g.bias)[l * g.batch_stride_bias + n]);")
    if ep.source == "full" and ep.residual != "full":
        lines.append(f"    v += generic::Num<{td}>::load(static_cast<const {td}*>(g.C)[l * g.batch_stride_c + m * g.ldc + n]);")
    lines.append(f"    v = {acts[ep.act]};")
    if ep.residual:
        idx = "l * g.batch_stride_c + m * g.ldc + n" if ep.residual == "full" else "l * g.batch_stride_c + n"
        lines.append(f"    C r = generic::Num<{td}>::load(static_cast<const {td}*>(g.C)[{idx}]);")
        lines.append(f"    v = {'v + r' if ep.residual_op == 'add' else 'v * r'};")
    if ep.post:
        lines.append("    v = (v < 0 ? C(0) : v);")
    lines += [f"    static_cast<{td}*>(g.D)[l * g.batch_stride_d + m * g.ldd + n] = generic::Num<{td}>::store(v);",
              "  }", "  return BYOCC_OK;", "}", "}  // namespace byocc"]
    return "\n".join(lines) + "\n"


def _configs(funcs):
    """Every CUTLASS kernel configuration the codegen compiles for ``funcs``."""
    from byocc.backends.cutlass.conv_plan import conv_step
    from byocc.backends.cutlass.conv_plan import pointwise_gemm
    from byocc.backends.cutlass.gemm_plan import plan_gemm
    from byocc.backends.program import gemm_step
    from byocc.backends.program import offloaded_program

    cfgs = {}
    for sym, func in funcs:
        prog = offloaded_program(sym, func, {})
        for call in prog.calls:
            step, mm_shape = gemm_step(call.func), None
            conv = conv_step(call.func) if step is None else None
            if conv is not None:
                step, mm_shape = pointwise_gemm(conv), tuple(conv.conv_sinfo.shape)
            if step is None:
                continue
            for tier in plan_gemm(step, call, sym, {}, mm_shape=mm_shape).tiers:
                if tier.cfg is not None:
                    cfgs[tier.cfg.path] = tier.cfg
    return cfgs


HOST_CASES = [
    dict(xs=(32, 6), ws=(6, 16)),
    dict(xs=(4, 16), ws=(128, 16), trans=True, bias=(128,), act="relu"),
    dict(xs=(6, 32, 8), ws=(6, 8, 10), bias=(10,)),
    dict(xs=("a", 32, 8), ws=(8, 16), bias=(16,)),
    dict(xs=(32, 8), ws=(5, 3, 8, 16), bias=(16,), act="gelu"),
    dict(xs=(1, 1, 16, 15), ws=(3, 2, 15, 2)),
    dict(xs=(32, 8), ws=(8, 8), bias=(8,), res=(32, 8)),
    dict(xs=(4, 16), ws=(16, 16), trans=True, bias=(16,), act="relu", res=(4, 16), post="relu"),
    dict(xs=(64, 32), ws=(32, 64), bias=(64, 1), act="gelu"),
    dict(xs=(4, 64, 32), ws=(4, 32, 64), bias=(4, 1, 64)),
    dict(xs=(4, 64, 32), ws=(4, 32, 64), bias=(4, 64, 64), act="silu"),
    dict(xs=(64, 32), ws=(32, 64), bias=(4, 64, 64)),
    dict(xs=(64, 32), ws=(32, 64), bias=(64,), out_dtype="float32"),
    dict(xs=(64, 32), ws=(32, 64), dtype="float32", bias=(64,), act="relu"),
    dict(xs=(64, 32), ws=(32, 64), dtype="int8", out_dtype="int32"),
    dict(xs=(2, 64, 32), ws=(2, 64, 32), trans=True, dtype="int8", out_dtype="int32"),
    dict(xs=(3, 8), ws=(8, 2, 16), trans=(1, 0, 2)),
    dict(xs=(3, 16), ws=(16, 2, 16), trans=(1, 0, 2), dtype="int8", out_dtype="int32"),
    dict(xs=(64, 32), ws=(32, 64), bias=(64,), res=(64,), res_op="multiply", post="relu"),
    dict(xs=(64, 32), ws=(32, 64), bias=(64, 1), act="relu", res=(64, 64), res_op="multiply"),
    dict(xs=(2, 16, 32), ws=(32, 64), bias=(64,), res=(2, 16, 64), res_op="multiply"),
    # split-K (docs/codegen.md#split-k): 4 slices tn, 2 slices nn, and a symbolic-M bucket
    dict(xs=(16, 1024), ws=(256, 1024), trans=True, bias=(256,), act="relu"),
    dict(xs=(8, 512), ws=(512, 64), bias=(64,), res=(8, 64)),
    dict(xs=("a", 512), ws=(512, 64), bias=(64,), act="gelu"),
    # K zero-padded for the TMA tier (docs/codegen.md#unaligned-k): nn, tn, batched, bucketed
    dict(xs=(32, 12), ws=(12, 16), bias=(16,), act="relu"),
    dict(xs=(32, 20), ws=(24, 20), trans=True, bias=(24,)),
    dict(xs=(2, 16, 12), ws=(2, 12, 16), bias=(16,)),
    dict(xs=("a", 3, 20), ws=(20, 8), bias=(8,), act="relu"),
    # 1x1 stride-1 conv2d as a GEMM (docs/codegen.md#cutlass-conv2d-family): per-channel bias,
    # a full residual, a general (per-row) bias, an unaligned C (K padded)
    dict(xs=(2, 5, 6, 16), ws=(24, 1, 1, 16), conv=True, bias=(1, 1, 1, 24), act="relu"),
    dict(xs=(1, 4, 4, 8), ws=(8, 1, 1, 8), conv=True, bias=(8,), res=(1, 4, 4, 8), res_op="multiply", post="relu"),
    dict(xs=(1, 4, 4, 8), ws=(8, 1, 1, 8), conv=True, bias=(1, 4, 1, 1), res=(8,)),
    dict(xs=(1, 3, 3, 12), ws=(16, 1, 1, 12), conv=True, bias=(16,), act="silu"),
]


def _host_inputs(func, rng, sym_values):

    from byocc.ops.reference import np_dtype

    arrays = []
    for p in func.params:
        si = p.struct_info
        dims = [d if isinstance(d, int) else sym_values[str(d.name)] for d in si.shape]
        if si.dtype.startswith("int"):
            arrays.append(rng.integers(-8, 8, dims).astype(np_dtype(si.dtype)))
        else:
            arrays.append(rng.uniform(-1, 1, dims).astype(np_dtype(si.dtype)))
    return arrays


@needs_nvcc
def test_wrappers_on_the_host_match_the_interpreter(tmp_path):
    """Run four times: as on sm_90 (TMA tier first), as on sm_80, with every CUTLASS unit
    refusing (can_implement false), and with every CUTLASS run failing in initialize (the
    wrapper moves on to the next variant); the generic SIMT GEMM serves the last two."""
    import os

    import numpy as np

    from byocc.backends.cuda.common import runtime_source
    from byocc.backends.cuda.generic import header_source
    from byocc.backends.dtypes import DTYPES
    from byocc.runtime import Interpreter

    rng = np.random.default_rng(1)
    sources: dict = {}
    cfgs: dict = {}
    runs = []
    modules = [(parse_module(matmul_module(**kw)), "annotate", kw) for kw in HOST_CASES]
    modules.append((read_file(SAMPLES / "mlp_fp16.relax"), "merge", "mlp"))
    for k, (mod, path, label) in enumerate(modules):
        part = partition(mod, get_patterns_with_prefix("cutlass"), path=path)
        named = [(name, f) for name, f in part.functions.items()
                 if getattr(f, "attrs", {}).get("Codegen") == "cutlass"]
        assert len(named) == 1, label
        (gname, func), = named
        funcs = [(f"{func.attrs['global_symbol']}_c{k}", func)]
        funcs = [(sym, f.with_attrs(global_symbol=sym)) for sym, f in funcs]
        gm = codegen(funcs, {}, {})[0]
        for src in gm.sources:
            assert sources.setdefault(src.path, src).text == src.text
        cfgs.update(_configs(funcs))
        (entry,) = gm.entries
        # the offloaded function itself, run by the interpreter (composites as plain calls)
        inputs = _host_inputs(func, rng, {"a": 5})
        want = np.asarray(Interpreter(part).run(inputs, entry=gname))
        runs.append((label, entry, funcs[0][1], inputs, want))
    src_dir = tmp_path / "src"
    for src in [header_source()] + [s for s in common_sources() if s.path.endswith(".h")] + list(sources.values()):
        p = tmp_path / src.path
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(src.text)
    runtime = runtime_source()
    start = runtime.index("int device_info(int device, DeviceInfo* out) {")
    end = runtime.index("\n}\n", start) + 3
    (tmp_path / "runtime_host.cu").write_text(
        "#include <stdlib.h>\n" + runtime[:start] + _FAKE_RUNTIME_DEVICE_INFO + runtime[end:])
    fakes = [_HOST_KERNELS]
    for cfg in cfgs.values():
        fakes.append(_fake_cutlass_unit(cfg))
    for path in sources:
        name = Path(path).stem
        if name.startswith("generic_gemm_"):
            _, _, a, b, d = name.split("_")
            t = {row.short: row.ctype for row in DTYPES.values()}
            fakes.append(f"namespace byocc {{ namespace generic {{ int {name.removeprefix('generic_')}_run(const GemmArgs& g, "
                         f"int64_t sbk, int64_t sbn, const Epilogue& e, cudaStream_t) {{ "
                         f"return host_gemm<{t[a]}, {t[b]}, {t[d]}>(g, sbk, sbn, e); }} }} }}")
        elif name.startswith("generic_splitk_"):
            d = {row.short: row.ctype for row in DTYPES.values()}[name.split("_")[-1]]
            fakes.append(f"namespace byocc {{ namespace generic {{ int {name.removeprefix('generic_')}_run(const void* parts, "
                         "int64_t splits, int64_t slice, const Epilogue& e, void* out, int, cudaStream_t) { "
                         "for (int64_t i = 0; i < slice; ++i) { float acc = 0; for (int64_t s = 0; s < splits; ++s) "
                         "acc += static_cast<const float*>(parts)[s * slice + i]; "
                         f"epilogue_store<{d}>(acc, i, e, static_cast<{d}*>(out)); }} return BYOCC_OK; }} }} }}")
        elif name.startswith("generic_pad_"):
            fakes.append(f"namespace byocc {{ namespace generic {{ int {name.removeprefix('generic_')}_run(const void* src, "
                         "void* dst, int64_t batches, int64_t rows, int64_t cols, int64_t rows_p, int64_t cols_p, int, "
                         "cudaStream_t) { const uint16_t* s = static_cast<const uint16_t*>(src); "
                         "uint16_t* d = static_cast<uint16_t*>(dst); "
                         "for (int64_t b = 0; b < batches; ++b) for (int64_t r = 0; r < rows_p; ++r) "
                         "for (int64_t c = 0; c < cols_p; ++c) d[(b * rows_p + r) * cols_p + c] = "
                         "(r < rows && c < cols) ? s[(b * rows + r) * cols + c] : uint16_t(0); "
                         "return BYOCC_OK; } } }")
        elif name.startswith("generic_epilogue_"):
            _, _, s, d = name.split("_")
            t = {row.short: row.ctype for row in DTYPES.values()}
            fakes.append(f"namespace byocc {{ namespace generic {{ int {name.removeprefix('generic_')}_run(const Operand& src, "
                         f"const Epilogue& e, void* out, int, cudaStream_t) {{ return host_epilogue<{t[s]}, {t[d]}>(src, e, out); }} }} }}")
    (tmp_path / "fakes.cu").write_text("\n".join(fakes) + "\n")
    main = ["#include <stdio.h>", "#include <stdlib.h>", "#include <vector>", '#include "byocc_internal.h"', ""]
    for _, entry, _, _, _ in runs:
        main.append(entry.c_signature.replace('extern "C"', 'extern "C"'))
        main.append(entry.scratch_signature)
    main += ["static void* load(const char* path, size_t bytes) {",
             "  void* p = aligned_alloc(256, (bytes + 255) / 256 * 256 + 256);",
             '  FILE* f = fopen(path, "rb"); if (!f || fread(p, 1, bytes, f) != bytes) { printf("read %s\\n", path); exit(2); }',
             "  fclose(f); return p;", "}", "int main() {", "  int rc = 0;"]
    for k, (_label, entry, _func, inputs, want) in enumerate(runs):
        tensors = list(inputs) + [want]
        main.append(f"  {{  // {k}: {entry.symbol}")
        main.append(f"    DLTensor t[{len(tensors)}]; const DLTensor* args[{len(tensors)}];")
        main.append(f"    static int64_t shapes[{len(tensors)}][8];")
        for j, arr in enumerate(tensors):
            arr = np.ascontiguousarray(arr)
            if j < len(inputs):
                arr.tofile(tmp_path / f"r{k}_{j}.bin")
                main.append(f'    void* d{j} = load("{tmp_path}/r{k}_{j}.bin", {arr.nbytes});')
            else:
                main.append(f"    void* d{j} = aligned_alloc(256, {max(256, (arr.nbytes + 255) // 256 * 256)});")
            code, bits = {"f": 2, "i": 0, "u": 1}[arr.dtype.kind], arr.dtype.itemsize * 8
            for ax, d in enumerate(arr.shape):
                main.append(f"    shapes[{j}][{ax}] = {d};")
            main.append(f"    t[{j}] = DLTensor{{d{j}, {{kDLCUDA, 0}}, {arr.ndim}, {{{code}, {bits}, 1}}, shapes[{j}], nullptr, 0}};")
            main.append(f"    args[{j}] = &t[{j}];")
        n = len(tensors)
        main.append(f"    uint64_t need = byocc_scratch_bytes_{entry.symbol}(args, {n});")
        main.append("    void* scratch = need ? aligned_alloc(256, (need + 255) / 256 * 256) : nullptr;")
        main.append(f"    int r = {entry.symbol}(args, {n}, scratch, need, nullptr);")
        main.append(f'    if (r != 0) {{ printf("case {k} failed %d: %s\\n", r, byocc_last_error()); rc = 1; }}')
        main.append(f'    FILE* f = fopen("{tmp_path}/r{k}_out.bin", "wb"); fwrite(d{n - 1}, 1, {want.nbytes}, f); fclose(f);')
        if entry.scratch_bytes is not None:
            main.append(f'    if (need != {entry.scratch_bytes}ull) {{ printf("case {k}: scratch %llu != manifest {entry.scratch_bytes}\\n", (unsigned long long)need); rc = 1; }}')
        main.append("  }")
    main += ["  return rc;", "}"]
    (tmp_path / "main.cu").write_text("\n".join(main) + "\n")
    units = [tmp_path / "main.cu", tmp_path / "fakes.cu", tmp_path / "runtime_host.cu"]
    units += [tmp_path / e.source_file for _, e, _, _, _ in runs]
    exe = tmp_path / "host_run"
    proc = subprocess.run([NVCC, "-std=c++17", "-O0", "-I", str(src_dir), *map(str, units), "-o", str(exe)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-5000:]
    for major, no_cutlass in (("9", False), ("8", False), ("9", True), ("9", "run fails")):
        env = dict(os.environ, FAKE_MAJOR=major)
        if no_cutlass is True:
            env["FAKE_NO_CUTLASS"] = "1"
        elif no_cutlass:
            env["FAKE_RUN_FAILS"] = "1"
        proc = subprocess.run([str(exe)], capture_output=True, text=True, env=env)
        assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
        ran = proc.stderr
        if no_cutlass:
            assert "ran " not in ran
        else:
            assert ("ran sm90" in ran) == (major == "9") and "ran sm80" in ran
        failures = []
        for k, (label, _entry, _, _, want) in enumerate(runs):
            got = np.fromfile(tmp_path / f"r{k}_out.bin", dtype=want.dtype).reshape(want.shape)
            if want.dtype.kind == "f":
                # fp32 accumulation and epilogue vs the interpreter's per-op f16 rounding
                scale = max(1.0, float(np.abs(want.astype(np.float64)).max()))
                ok = np.allclose(got.astype(np.float64), want.astype(np.float64), rtol=1e-2, atol=1e-2 * scale)
            else:
                ok = np.array_equal(got, want)
            if not ok:
                err = np.abs(got.astype(np.float64) - want.astype(np.float64)).max()
                failures.append(f"{label} (major {major}, cutlass {not no_cutlass}): max |err| {err}")
        assert not failures, "\n".join(failures)
