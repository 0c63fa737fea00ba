"""The CUTLASS codegen's layer_norm and rms_norm steps (docs/codegen.md#layer_norm-and-rms_norm):
the composite read from its body, the refusals, the epsilon (the IR's, the called prim_func's,
the ``rms_eps`` option), symbolic rows, a norm merged with GEMMs, the manifest record, the
samples, and one generated library of norm functions compiled and linked with nvcc."""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from byocc.backends import get_patterns_with_prefix
from byocc.backends.codegen import CodegenError
from byocc.backends.cuda.common import common_sources
from byocc.backends.cutlass.codegen import codegen
from byocc.backends.cutlass.codegen import supports
from byocc.backends.cutlass.norm_step import prim_func_epsilon
from byocc.backends.options import OptionError
from byocc.backends.patterns import make_layer_norm_pattern
from byocc.cli.main import cli
from byocc.script import from_source
from byocc.script import tirx
from byocc.text import parse_module
from byocc.text import read_file
from byocc.transform import partition

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "samples"
NVCC = shutil.which("nvcc")
needs_nvcc = pytest.mark.skipif(NVCC is None, reason="nvcc not installed")
TAGS = {"float16": "f16", "bfloat16": "bf16", "float32": "f32"}


def generate(mod, path="annotate", patterns=None, options=None):
    out = partition(mod, patterns or get_patterns_with_prefix("cutlass"), path=path, run_codegen=True,
                    codegens={"cutlass": codegen}, target_options={"cutlass": options or {}})
    (gm,) = out.attrs["external_mods"]
    return gm


def shape(dims) -> str:
    inner = ", ".join(repr(d) if isinstance(d, str) else str(d) for d in dims)
    return f"({inner},)" if len(dims) == 1 else f"({inner})"


def layer_norm_module(dims=(64, 768), dtype="float16", eps="1e-06", axes="[-1]", center=True, gamma=None) -> str:
    n = ", ".join(str(d) for d in gamma) if gamma else f"{dims[-1]},"
    return f"""# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor({shape(dims)}, dtype="{dtype}"), g: R.Tensor(({n}), dtype="{dtype}"), b: R.Tensor(({n}), dtype="{dtype}")):
        with R.dataflow():
            y = R.nn.layer_norm(x, g, b, axes={axes}, epsilon={eps}, center={center}, scale=True)
            R.output(y)
        return y
"""


#: The square root of TVM's LegalizeOps rms_norm: ``{eps}`` is what is added to the mean.
STANDARD = "T.sqrt(Ared_temp[v_i] * T.float32(0.0013020833333333333) + {eps})"
#: TVM's text for epsilon 1e-6.
STANDARD_1E6 = STANDARD.format(eps="T.float32(9.9999999999999995e-07)")


def rms_norm_module(dims=(64, 768), dtype="float16", sqrt=STANDARD_1E6,
                    out_dims=None, out_dtype=None, matmul=False):
    """A ``call_tir`` of an rms_norm prim_func (its body as TVM writes it; kept as text), then
    optionally a matmul, parsed with TIR allowed (a script, not a .relax file)."""
    n = dims[-1]
    out = shape(out_dims or dims)
    tail = ("            z = R.matmul(y, w)\n            R.output(z)\n        return z\n" if matmul
            else "            R.output(y)\n        return y\n")
    w_param = f', w: R.Tensor(({n}, 256), dtype="{dtype}")' if matmul else ""
    text = f"""@I.ir_module
class Module:
    @T.prim_func(private=True)
    def rms_norm(var_A: T.handle, B: T.Buffer((T.int64({n}),), "{dtype}"), var_rms_norm: T.handle):
        T.func_attr({{"tir.noalias": True}})
        A = T.match_buffer(var_A, (T.int64(64), T.int64({n})), "{dtype}")
        rms_norm = T.match_buffer(var_rms_norm, (T.int64(64), T.int64({n})), "{dtype}")
        Ared_temp = T.alloc_buffer((T.int64(64),))
        for i, k in T.grid(T.int64(64), T.int64({n})):
            with T.sblock("Ared_temp"):
                v_i, v_k = T.axis.remap("SR", [i, k])
                with T.init():
                    Ared_temp[v_i] = T.float32(0.0)
                Ared_temp[v_i] = Ared_temp[v_i] + T.Cast("float32", A[v_i, v_k]) * T.Cast("float32", A[v_i, v_k])
        for i, k in T.grid(T.int64(64), T.int64({n})):
            with T.sblock("rms_norm"):
                v_i, v_k = T.axis.remap("SS", [i, k])
                rms_norm[v_i, v_k] = T.Cast("{dtype}", T.Cast("float32", B[v_k]) * (T.Cast("float32", A[v_i, v_k]) / {sqrt}))

    @R.function
    def main(x: R.Tensor({shape(dims)}, dtype="{dtype}"), g: R.Tensor(({n},), dtype="{dtype}"){w_param}):
        cls = Module
        with R.dataflow():
            y = R.call_tir(cls.rms_norm, (x, g), out_sinfo=R.Tensor({out}, dtype="{out_dtype or dtype}"))
{tail}"""
    return from_source(text, extra_vars={"T": tirx})


def only_entry(gm):
    (entry,) = gm.entries
    return entry


def wrapper_of(gm, entry) -> str:
    return next(s.text for s in gm.sources if s.path == entry.source_file)


def paths(gm) -> list[str]:
    return sorted(s.path for s in gm.sources)


# --------------------------------------------------------------------------- layer_norm
@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
def test_layer_norm_in_every_dtype(dtype):
    gm = generate(parse_module(layer_norm_module(dtype=dtype)))
    e = only_entry(gm)
    tag = TAGS[dtype]
    assert e.composites == ("cutlass.layer_norm",)
    assert e.kernel_sources == (f"src/kernels/norm_{tag}.cu",)
    assert f"src/kernels/norm_{tag}.cu" in paths(gm) and "src/byocc_norm.cuh" in paths(gm)
    assert [a.role for a in e.args] == ["data", "gamma", "beta"] and e.scratch_bytes == 0
    assert not gm.needs_cutlass  # no CUTLASS unit: a norm alone builds without CUTLASS
    text = wrapper_of(gm, e)
    assert (f"const int nrc = byocc_layer_norm_{tag}(byocc::data_of(args[0]), byocc::data_of(args[1]), "
            "byocc::data_of(args[2]), byocc::data_of(args[3]), rows, n, eps, stream);") in text
    assert "const int64_t rows = int64_t(64);" in text and "const int64_t n = int64_t(768);" in text
    assert 'return byocc::fail(BYOCC_E_CUDA, "%s: byocc_layer_norm_' in text
    assert "cudaGetErrorString(static_cast<cudaError_t>(nrc))" in text
    assert "rows > int64_t(" not in text  # static rows: checked at codegen time
    assert e.variants[0].to_json() == {"arch": "sm_80", "impl": "byocc_norm", "kernel": f"src/kernels/norm_{tag}.cu"}
    assert dict(e.attrs) == {"norm": "layer_norm", "epsilon": 1e-06, "epsilon_source": "ir"}


def test_tvm_defect_layer_norm_epsilon_is_the_irs():
    """TVM's CUTLASS layer_norm hard-codes 1e-5; byocc passes the IR's epsilon."""
    for eps in ("1e-06", "0.001", "1.0000000000000001e-05"):
        e = only_entry(generate(parse_module(layer_norm_module(eps=eps))))
        assert e.steps[0]["epsilon"] == float(eps) and e.steps[0]["epsilon_source"] == "ir"
        assert f"const float eps = static_cast<float>({float(eps)!r});" in wrapper_of(generate(
            parse_module(layer_norm_module(eps=eps))), e)


def test_symbolic_rows_are_computed_at_run_time():
    gm = generate(parse_module(layer_norm_module(dims=("b", "s", 4096))))
    e = only_entry(gm)
    text = wrapper_of(gm, e)
    assert "const int64_t rows = d.s0 * d.s1;" in text and "const int64_t n = int64_t(4096);" in text
    assert "if (rows > int64_t(2147483647)) {" in text and "BYOCC_E_SHAPE" in text
    assert e.steps[0]["rows"] == "b * s" and e.steps[0]["n"] == "4096"
    assert e.scratch_bytes == 0


def test_symbolic_n():
    gm = generate(parse_module(layer_norm_module(dims=(8, "h")).replace("((h,)", '(("h",)')))
    assert only_entry(gm).steps[0]["n"] == "h"
    text = wrapper_of(gm, only_entry(gm))
    assert "const int64_t rows = int64_t(8);" in text and "const int64_t n = d.s0;" in text


def _bare_table():
    """The layer_norm entry without TVM's check: the composite reaches the codegen as written."""
    return [("cutlass.layer_norm", *make_layer_norm_pattern())]


@pytest.mark.parametrize(("kw", "reason"), [
    ({"dims": (4, 8, 16), "axes": "[1]"}, r"layer_norm over axes \[1\]: only the last axis \(\[-1\]\) is normalised"),
    ({"axes": "[0, 1]", "gamma": (64, 768)}, r"layer_norm over axes \[0, 1\]: only the last axis"),
    ({"center": False}, "layer_norm without center or scale is not supported"),
])
def test_unsupported_layer_norms_are_clear_errors(kw, reason):
    text = layer_norm_module(**kw)
    if "dims" in kw:  # gamma/beta of the normalised axis
        text = text.replace("R.Tensor((16,)", "R.Tensor((8,)")
    with pytest.raises(CodegenError, match=r"function fused_relax_nn_layer_norm_cutlass, composite cutlass.layer_norm: "
                       + reason):
        generate(parse_module(text), patterns=_bare_table())


def test_tvms_check_keeps_the_cutlass_table_from_offloading_them():
    out = partition(parse_module(layer_norm_module(dims=(768, 768), axes="[0]")), get_patterns_with_prefix("cutlass"))
    assert "Codegen" not in str(out)


def test_a_float64_layer_norm_is_refused():
    text = layer_norm_module(dtype="float64", eps="1e-05")
    with pytest.raises(CodegenError, match=r"composite cutlass.layer_norm: layer_norm of float64: byocc's norm "
                       r"kernels take float16, bfloat16, float32"):
        generate(parse_module(text), patterns=_bare_table())


# --------------------------------------------------------------------------- rms_norm
@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
def test_rms_norm_epsilon_from_the_prim_func(dtype):
    gm = generate(rms_norm_module(dtype=dtype))
    e = only_entry(gm)
    tag = TAGS[dtype]
    assert e.composites == ("cutlass.rms_norm",) and [a.role for a in e.args] == ["data", "weight"]
    assert e.steps[0]["epsilon"] == 1e-06 and e.steps[0]["epsilon_source"] == "prim_func"
    assert e.steps[0]["prim_func"] == "rms_norm" and e.steps[0]["kind"] == "rms_norm"
    text = wrapper_of(gm, e)
    assert (f"byocc_rms_norm_{tag}(byocc::data_of(args[0]), byocc::data_of(args[1]), byocc::data_of(args[2]), "
            "rows, n, eps, stream);") in text
    assert "eps 1e-06 (from prim_func rms_norm)" in text


def test_rms_norm_epsilon_from_the_option_when_the_text_is_not_standard():
    nonstandard = [
        "T.sqrt(Ared_temp[v_i] * T.float32(0.0013020833333333333))",  # no constant added
        STANDARD.format(eps="T.float32(1e-05)") + " * (T.float32(1) + T.float32(0.5))",  # two
        "(Ared_temp[v_i] * T.float32(0.0013020833333333333) + T.float32(1e-05))",  # no square root
    ]
    for sqrt in nonstandard:
        e = only_entry(generate(rms_norm_module(sqrt=sqrt)))
        assert (e.steps[0]["epsilon"], e.steps[0]["epsilon_source"]) == (1e-05, "option")
    e = only_entry(generate(rms_norm_module(sqrt=nonstandard[0]), options={"rms_eps": "3e-6"}))
    assert (e.steps[0]["epsilon"], e.steps[0]["epsilon_source"]) == (3e-06, "option")
    # the prim_func's epsilon wins over the option
    e = only_entry(generate(rms_norm_module(), options={"rms_eps": 0.5}))
    assert e.steps[0]["epsilon_source"] == "prim_func"


def test_prim_func_epsilon_reads_only_the_standard_form():
    assert prim_func_epsilon("T.rsqrt(T.float32(1e-5) + s / T.float32(4096))") == 1e-5
    assert prim_func_epsilon("T.sqrt(s * T.float32(0.25) + T.float32(2e-6))") == 2e-6
    assert prim_func_epsilon("T.sqrt(s * T.float32(0.25))") is None
    assert prim_func_epsilon("T.sqrt(s + T.float32(1e-5) * t)") is None  # a product, not an addend
    assert prim_func_epsilon("T.sqrt(s + T.float32(-1e-5))") is None
    assert prim_func_epsilon("s + T.float32(1e-5)") is None  # no square root


@pytest.mark.parametrize("value", ["0", "-1e-5", "nan", "inf", "small"])
def test_rms_eps_must_be_a_positive_number(value):
    with pytest.raises(OptionError, match=r"cutlass option rms_eps must be a finite number > 0"):
        generate(rms_norm_module(), options={"rms_eps": value})


def test_rms_norm_call_with_another_output_is_refused():
    with pytest.raises(CodegenError, match=r"function fused_rms_norm_cutlass, composite cutlass.rms_norm: the call's "
                       r"output .* differs from the input's shape or dtype \(float16 \(64, 768\)\)"):
        generate(rms_norm_module(out_dims=(64, 384)))
    with pytest.raises(CodegenError, match="differs from the input's shape or dtype"):
        generate(rms_norm_module(out_dtype="float32"))


def test_the_relax_rms_norm_op_through_a_pattern_file_takes_the_irs_epsilon():
    from byocc.dpl import is_op
    from byocc.dpl import wildcard

    text = (ROOT.parent / "shared" / "conformance" / "cases" / "rms_norm_custom_pattern" / "input.relax")
    if not text.exists():
        pytest.skip("conformance corpus not present")
    mod = read_file(text)
    table = [("cutlass.my_rms_norm", is_op("relax.nn.rms_norm")(wildcard(), wildcard()))]
    e = only_entry(generate(mod, patterns=table))
    assert e.steps[0]["kind"] == "rms_norm" and e.steps[0]["epsilon_source"] == "ir"
    assert e.kernel_sources == ("src/kernels/norm_f16.cu",)


# --------------------------------------------------------------------------- merged, manifest
def test_a_norm_merged_with_gemms_runs_on_scratch():
    gm = generate(rms_norm_module(matmul=True), path="merge")
    e = only_entry(gm)
    assert e.composites == ("cutlass.rms_norm", "cutlass.matmul")
    # the normalised (64, 768) f16 intermediate, and the decode GEMM's split-K partials beside it
    assert e.scratch_bytes >= 64 * 768 * 2
    assert "src/kernels/norm_f16.cu" in e.kernel_sources and gm.needs_cutlass
    text = wrapper_of(gm, e)
    assert ("byocc_rms_norm_f16(byocc::data_of(args[0]), byocc::data_of(args[1]), "
            "static_cast<void*>(static_cast<char*>(scratch) + off.temp0), rows, n, eps, stream);") in text
    assert dict(e.attrs) == {}  # a merged function: its facts are the steps'
    assert [s["kind"] for s in e.steps] == ["rms_norm", "gemm"]


@pytest.mark.parametrize("path", ["annotate", "merge"])
def test_transformer_block_partition_o_completes(tmp_path, path):
    result = CliRunner().invoke(cli, ["partition", str(SAMPLES / "transformer_block_fp16.relax"), "--backend",
                                      "cutlass", "--path", path, "-o", str(tmp_path / "o")])
    assert result.exit_code == 0, result.output
    manifest = json.loads((tmp_path / "o" / "manifest.json").read_text())
    assert manifest["codegen_options"]["cutlass"]["rms_eps"] == 1e-05
    norms = [s for f in manifest["functions"] for s in f["steps"] if s["kind"] == "layer_norm"]
    assert len(norms) == (2 if path == "merge" else 1)  # annotate: both calls share one function
    for s in norms:
        assert s == {"composite": "cutlass.layer_norm", "kind": "layer_norm", "dtype": "float16", "rows": "16",
                     "n": "64", "epsilon": 1e-05, "epsilon_source": "ir",
                     "variants": [{"arch": "sm_80", "impl": "byocc_norm", "kernel": "src/kernels/norm_f16.cu"}]}
    assert (tmp_path / "o" / "src" / "byocc_norm.cuh").is_file()
    ninja = (tmp_path / "o" / "build.ninja").read_text()
    assert "src/kernels/norm_f16.cu" in ninja


def test_supports_names_the_norms():
    assert supports("cutlass.layer_norm") and supports("cutlass.rms_norm")
    assert not supports("cutlass.decode_matmul") and not supports("cutlass.attention_var_len")


@pytest.mark.parametrize("path", ["annotate", "merge"])
def test_the_rms_norm_sample_writes_code(tmp_path, monkeypatch, path):
    spec = importlib.util.spec_from_file_location("rms_norm_fp16_sample", SAMPLES / "rms_norm_fp16.py")
    sample = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, sample)  # @I.ir_module reads the class's source
    spec.loader.exec_module(sample)
    assert sample.main(["-o", str(tmp_path / "o"), "--path", path]) == 0
    manifest = json.loads((tmp_path / "o" / "manifest.json").read_text())
    steps = [s for f in manifest["functions"] for s in f["steps"]]
    assert [s["kind"] for s in steps] == ["rms_norm", "gemm"] if path == "merge" else \
        sorted(s["kind"] for s in steps) == ["gemm", "rms_norm"]
    rms = next(s for s in steps if s["kind"] == "rms_norm")
    assert (rms["epsilon"], rms["epsilon_source"], rms["rows"]) == (1e-06, "prim_func", "2 * 16")
    assert (tmp_path / "o" / "src" / "kernels" / "norm_f16.cu").is_file()


# --------------------------------------------------------------------------- compiled
@needs_nvcc
def test_norm_units_and_wrappers_compile_and_link(tmp_path):
    """A library of a f16 layer_norm (symbolic rows) and a bf16 rms_norm: the wrappers, the
    two norm units and the runtime compile with -Werror and link with no undefined symbol
    (the wrappers' prototypes are the units' entry points)."""
    sources = {}
    entries = []
    for gm in (generate(parse_module(layer_norm_module(dims=("n", 768)))), generate(rms_norm_module(dtype="bfloat16"))):
        sources.update((s.path, s) for s in gm.sources)
        entries += gm.entries
    for src in [*common_sources(), *sources.values()]:
        p = tmp_path / src.path
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(src.text)
    light = sorted(p for p, s in sources.items() if s.unit == "light") + ["src/runtime.cu"]
    assert [p for p in light if p.startswith("src/kernels/norm_")] == ["src/kernels/norm_bf16.cu", "src/kernels/norm_f16.cu"]
    objs = []
    for rel in light:
        obj = tmp_path / (Path(rel).name + ".o")
        cmd = [NVCC, "-std=c++17", "-O1", "-Xcompiler=-fPIC", "-Xcompiler=-fvisibility=hidden",
               "-gencode=arch=compute_80,code=sm_80", "-Werror", "all-warnings", "-I", str(tmp_path / "src"),
               "-c", str(tmp_path / rel), "-o", str(obj)]
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=600)
        assert proc.returncode == 0, f"{rel}:\n{proc.stderr[-4000:]}"
        objs.append(str(obj))
    lib = tmp_path / "libnorm.so"
    proc = subprocess.run([NVCC, "-shared", "-cudart", "shared", "-Xlinker", "--no-undefined", "-o", str(lib), *objs],
                          capture_output=True, text=True, check=False, timeout=300)
    assert proc.returncode == 0, proc.stderr[-4000:]
    nm = subprocess.run(["nm", "-D", "--defined-only", str(lib)], capture_output=True, text=True, check=True).stdout
    for entry in entries:
        assert f" T {entry.symbol}\n" in nm
    assert "byocc_layer_norm_f16" not in nm  # the kernels' entry points stay inside the library
