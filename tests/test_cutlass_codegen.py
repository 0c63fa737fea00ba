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
from byocc.text import parse_module, read_file
from byocc.transform import partition

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "samples"
NVCC = shutil.which("nvcc")
needs_nvcc = pytest.mark.skipif(NVCC is None, reason="nvcc not installed")


def generate(mod, path="annotate"):
    out = partition(mod, get_patterns_with_prefix("cutlass"), path=path, run_codegen=True,
                    codegens={"cutlass": codegen})
    mods = list(out.attrs.get("external_mods", ()))
    assert len(mods) == 1
    return mods[0]


def shape(s) -> str:
    inner = ", ".join(repr(v) if isinstance(v, str) else str(v) for v in s)
    return f"({inner},)" if len(s) == 1 else f"({inner})"


def matmul_module(xs, ws, dtype="float16", trans=False, bias=None, act=None, res=None, res_op="add",
                  post=None, out_dtype=None) -> str:
    """``out = post(res_op(act(matmul(x, [permute_dims](w)) + bias), r))``, stages optional."""
    od = out_dtype or dtype
    params = [f'x: R.Tensor({shape(xs)}, dtype="{dtype}")', f'w: R.Tensor({shape(ws)}, dtype="{dtype}")']
    body = []
    wv = "w"
    if trans:
        nd = len(ws)
        axes = list(range(nd - 2)) + [nd - 1, nd - 2] if trans is True else list(trans)
        body.append(f"wt = R.permute_dims(w, axes={axes})")
        wv = "wt"
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
        ("sm_90a", "cutlass3x_tma_ws_cooperative", 8, "fused"),
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


def test_k6_gets_alignment_2_and_no_tma_unit():
    gm, entry = gen(xs=(32, 6), ws=(6, 16))
    assert impls(entry) == [("sm_80", "cutlass2x_tensorop", 2, "fused"), ("sm_80", "generic_simt", 1, "generic (fused)")]
    assert not any(s.unit == "sm90" for s in gm.sources)


def test_odd_k_runs_on_the_generic_gemm_only():
    gm, entry = gen(xs=(1, 1, 16, 15), ws=(3, 2, "a", 15, 2))
    assert impls(entry) == [("sm_80", "generic_simt", 1, "generic (fused)")]
    text = wrapper_of(gm, entry)
    # lhs batch product 1: L = the rhs batch, A batch stride 0
    assert "const int64_t gl = int64_t(3) * int64_t(2) * d.s0;" in text
    assert "g.batch_stride_a = int64_t(0);" in text


def test_symbolic_n_compiles_every_sm80_alignment():
    gm, entry = gen(xs=(64, 256), ws=(256, "n"), bias=("n",))
    assert [(v.impl, dict(v.params).get("align")) for v in entry.variants] == [
        ("cutlass3x_tma_ws_cooperative", 8), ("cutlass2x_tensorop", 8), ("cutlass2x_tensorop", 4),
        ("cutlass2x_tensorop", 2), ("generic_simt", 1)]


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
    assert "8-bit tensor cores need K-major B" in text
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


def test_layer_norm_is_a_codegen_error():
    mod = read_file(SAMPLES / "transformer_block_fp16.relax")
    with pytest.raises(CodegenError, match=r"function fused_relax_nn_layer_norm_cutlass, composite cutlass.layer_norm: "
                       r"the cutlass backend cannot generate code for this composite \(first unsupported op: "
                       r"relax.nn.layer_norm\)"):
        generate(mod)


def test_output_bytes_are_deterministic():
    mod = read_file(SAMPLES / "mlp_fp16.relax")
    a = generate(mod, "merge")
    b = generate(read_file(SAMPLES / "mlp_fp16.relax"), "merge")
    assert [(s.path, s.text) for s in a.sources] == [(s.path, s.text) for s in b.sources]
    assert [e.to_json() for e in a.entries] == [e.to_json() for e in b.entries]


def test_stream_k_reserves_a_workspace_bound():
    _, e = gen(xs=(128, 4096), ws=(4096, 4096), bias=(4096,), act="gelu")
    v = e.variants[0]
    assert v.impl == "cutlass3x_tma_ws_cooperative" and dict(v.params)["stream_k"] is True
    # 132 (H200 SMs) >= 32 tiles of 128x128 fp32 partials + barriers, each rounded to 256 B
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
