"""``--codegen-option BACKEND.KEY=VALUE`` (issue 18 item 5) and ``byocc list`` (issue 22
item 8): every option a backend's codegen reads changes the generated source as it should,
the manifest records the options used (defaults filled in), and a malformed item, an
unknown backend or key, or a bad value is a usage error (exit 2) naming what is valid."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import run_cli as run

from byocc.backends import CodegenOption
from byocc.backends import OptionError
from byocc.backends import OptionSchema
from byocc.backends import get_backend
from byocc.backends.codegen import CodegenError
from byocc.backends.cublas.codegen import codegen as cublas_codegen
from byocc.backends.cutlass.codegen import codegen as cutlass_codegen
from byocc.text import parse_module
from byocc.transform import partition

SAMPLES = Path(__file__).resolve().parents[2] / "samples"

HEAD = """\
# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
"""
F32_MATMUL = HEAD + """\
    def main(x: R.Tensor((16, 32), dtype="float32"), w: R.Tensor((32, 64), dtype="float32")) -> R.Tensor((16, 64), dtype="float32"):
        with R.dataflow():
            gv: R.Tensor((16, 64), dtype="float32") = R.matmul(x, w, out_dtype="void")
            R.output(gv)
        return gv
"""
GELU = HEAD + """\
    def main(x: R.Tensor((16, 32), dtype="float16"), w: R.Tensor((32, 64), dtype="float16"), b: R.Tensor((64,), dtype="float16")) -> R.Tensor((16, 64), dtype="float16"):
        with R.dataflow():
            lv: R.Tensor((16, 64), dtype="float16") = R.matmul(x, w, out_dtype="void")
            lv1: R.Tensor((16, 64), dtype="float16") = R.add(lv, b)
            gv: R.Tensor((16, 64), dtype="float16") = R.nn.gelu(lv1)
            R.output(gv)
        return gv
"""
F16_MATMUL = F32_MATMUL.replace("float32", "float16")


def generate(tmp_path: Path, text: str, backend: str, *options: str):
    """``byocc partition MODEL --backend B -o DIR --codegen-option ...``: (every file under
    DIR/src joined, the manifest)."""
    model = tmp_path / "m.relax"
    model.write_text(text)
    out = tmp_path / ("out" + "".join(f"_{o}" for o in options).replace("=", "-").replace(",", "+"))
    args = ["partition", model, "--backend", backend, "-o", out]
    for o in options:
        args += ["--codegen-option", o]
    result = run(*args)
    assert result.exit_code == 0, result.output
    src = {str(p.relative_to(out)): p.read_text() for p in sorted((out / "src").rglob("*")) if p.is_file()}
    return src, json.loads((out / "manifest.json").read_text())


def wrapper(src: dict) -> str:
    [text] = [t for p, t in src.items() if p.startswith("src/funcs/")]
    return text


# --------------------------------------------------------------------------- per option
def test_cublas_fp32_math_tf32_uses_the_fast_tf32_compute_type(tmp_path):
    src, manifest = generate(tmp_path, F32_MATMUL, "cublas")
    assert "p.compute = CUBLAS_COMPUTE_32F;" in wrapper(src)
    assert manifest["codegen_options"] == {"cublas": {"fast_gelu": False, "exact_gelu": True, "fp32_math": "ieee"}}
    tf32, manifest = generate(tmp_path, F32_MATMUL, "cublas", "cublas.fp32_math=tf32")
    assert "p.compute = CUBLAS_COMPUTE_32F_FAST_TF32;" in wrapper(tf32)
    assert manifest["codegen_options"]["cublas"]["fp32_math"] == "tf32"
    assert manifest["functions"][0]["attrs"]["fp32_math"] == "tf32"


@pytest.mark.parametrize("option", ["cublas.fast_gelu=true", "cublas.exact_gelu=false"])
def test_cublas_fast_gelu_uses_the_gelu_bias_epilogue(tmp_path, option):
    exact, _ = generate(tmp_path, GELU, "cublas")
    assert "p.epilogue = CUBLASLT_EPILOGUE_BIAS;" in wrapper(exact)
    assert "cublaslt_gelu_erf_inplace" in wrapper(exact)  # the erf GELU after the GEMM
    fast, manifest = generate(tmp_path, GELU, "cublas", option)
    assert "p.epilogue = CUBLASLT_EPILOGUE_GELU_BIAS;" in wrapper(fast)
    assert "cublaslt_gelu_erf_inplace" not in wrapper(fast)
    assert manifest["codegen_options"]["cublas"] == {"fast_gelu": True, "exact_gelu": False, "fp32_math": "ieee"}


def test_cublas_exact_gelu_true_is_the_default_code(tmp_path):
    default, _ = generate(tmp_path, GELU, "cublas")
    assert generate(tmp_path, GELU, "cublas", "cublas.exact_gelu=true")[0] == default
    assert generate(tmp_path, GELU, "cublas", "cublas.fast_gelu=false")[0] == default


def test_cutlass_arch_picks_the_generated_variants(tmp_path):
    both, manifest = generate(tmp_path, F16_MATMUL, "cutlass")
    assert manifest["codegen_options"] == {"cutlass": {"arch": ["sm_90a", "sm_80"], "rms_eps": 1e-05}}
    assert manifest["archs"] == ["sm_80", "sm_90a"]
    assert {v["arch"] for v in manifest["functions"][0]["variants"]} >= {"sm_90a", "sm_80"}
    assert "cutlass/gemm/collective/collective_builder.hpp" in "".join(both.values())  # a 3.x unit

    sm80, manifest = generate(tmp_path, F16_MATMUL, "cutlass", "cutlass.arch=sm_80")
    assert manifest["codegen_options"] == {"cutlass": {"arch": ["sm_80"], "rms_eps": 1e-05}}
    assert manifest["archs"] == ["sm_80"]
    assert "sm_90a" not in {v["arch"] for v in manifest["functions"][0]["variants"]}
    assert "sm_80" in {v["arch"] for v in manifest["functions"][0]["variants"]}
    assert "cutlass/gemm/collective/collective_builder.hpp" not in "".join(sm80.values())
    assert len(sm80) < len(both)

    impls = {v["impl"] for v in manifest["functions"][0]["variants"]}
    assert not any(i.startswith("cutlass3x") for i in impls) and any(i.startswith("cutlass2x") for i in impls)

    sm90, manifest = generate(tmp_path, F16_MATMUL, "cutlass", "cutlass.arch=sm_90a")
    impls = {v["impl"] for v in manifest["functions"][0]["variants"]}
    assert any(i.startswith("cutlass3x") for i in impls) and not any(i.startswith("cutlass2x") for i in impls)
    assert "generic_simt" in impls  # the fallback for any alignment stays
    # the order of a set does not matter; the aliases of the old API spelling are accepted
    assert generate(tmp_path, F16_MATMUL, "cutlass", "cutlass.arch=sm80,sm90")[0] == both


def test_the_defaults_written_out_change_nothing(tmp_path):
    default, _ = generate(tmp_path, GELU, "cublas")
    explicit, _ = generate(tmp_path, GELU, "cublas", "cublas.fast_gelu=false", "cublas.fp32_math=ieee")
    assert explicit == default


def test_the_api_reads_target_options_through_the_same_schema():
    mod = parse_module(F32_MATMUL)
    patterns = get_backend("cublas").patterns()
    out = partition(mod, patterns, run_codegen=True, codegens={"cublas": cublas_codegen},
                    target_options={"cublas": {"fp32_math": "tf32", "sm": 90}})  # TVM keys pass
    [module] = out.attrs["external_mods"]
    assert module.options["fp32_math"] == "tf32"
    with pytest.raises(CodegenError, match="cublas option fp32_math must be 'ieee' or 'tf32', got 'fast'"):
        partition(mod, patterns, run_codegen=True, codegens={"cublas": cublas_codegen},
                  target_options={"cublas": {"fp32_math": "fast"}})
    cut = partition(parse_module(F16_MATMUL), get_backend("cutlass").patterns(), run_codegen=True,
                    codegens={"cutlass": cutlass_codegen}, target_options={"cutlass": {"archs": ["sm_80"]}})
    assert cut.attrs["external_mods"][0].options == {"arch": ["sm_80"], "rms_eps": 1e-05}


# --------------------------------------------------------------------------- usage errors
@pytest.mark.parametrize(("option", "message"), [
    ("cublas.fp32_math=fast", "cublas option fp32_math must be 'ieee' or 'tf32', got 'fast'"),
    ("cublas.fast_gelu=maybe", "cublas option fast_gelu must be true or false, got 'maybe'"),
    ("cublas.nope=1", "cublas has no codegen option 'nope' (options: fast_gelu, exact_gelu, fp32_math)"),
    ("cutlass.arch=sm_75", "cutlass option arch must be a comma-separated list of 'sm_90a', 'sm_80', got 'sm_75'"),
    ("cutlass.arch=", "cutlass option arch must be a comma-separated list of 'sm_90a', 'sm_80', got ''"),
    ("cutlass.fp32_math=tf32", "cutlass has no codegen option 'fp32_math' (options: arch, rms_eps)"),
    ("nosuch.x=1", "unknown backend 'nosuch' (known: cublas, cutlass)"),
    ("cublas.fp32_math", "expected BACKEND.KEY=VALUE (e.g. cublas.fp32_math=tf32), got 'cublas.fp32_math'"),
    ("fp32_math=tf32", "expected BACKEND.KEY=VALUE"),
    ("cublas.=tf32", "expected BACKEND.KEY=VALUE"),
])
def test_a_bad_option_is_a_usage_error_naming_what_is_valid(tmp_path, option, message):
    # without -o too: the option is checked before any work
    for extra in ([], ["-o", tmp_path / "out"]):
        result = run("partition", SAMPLES / "mlp_fp16.relax", "--backend", "cublas", *extra,
                     "--codegen-option", option)
        assert result.exit_code == 2, result.output
        assert "Invalid value for '--codegen-option'" in result.stderr and message in result.stderr
    assert not (tmp_path / "out").exists()


def test_options_that_disagree_are_a_usage_error():
    result = run("partition", SAMPLES / "mlp_fp16.relax", "--backend", "cublas",
                 "--codegen-option", "cublas.fast_gelu=true", "--codegen-option", "cublas.exact_gelu=true")
    assert result.exit_code == 2
    assert "cublas options fast_gelu and exact_gelu are both set and disagree" in result.stderr


def test_a_later_option_wins(tmp_path):
    src, manifest = generate(tmp_path, F32_MATMUL, "cublas", "cublas.fp32_math=tf32", "cublas.fp32_math=ieee")
    assert manifest["codegen_options"]["cublas"]["fp32_math"] == "ieee"


# --------------------------------------------------------------------------- the schema
def test_the_schema_parses_text_and_python_values():
    schema = OptionSchema((
        CodegenOption("fast", "bool", False, "a flag"),
        CodegenOption("exact", "bool", True, "its negation", negates="fast"),
        CodegenOption("math", "choice", "a", "a choice", choices=("a", "b", "c")),
        CodegenOption("arch", "set", ("x", "y"), "a set", choices=("x", "y"), aliases={"X": "x"},
                      key_aliases=("archs",)),
    ), backend="demo")
    assert schema.resolve({}) == {"fast": False, "exact": True, "math": "a", "arch": ("x", "y")}
    assert schema.resolve({"fast": "yes", "archs": "y, X", "other": 1}) == {
        "fast": True, "exact": False, "math": "a", "arch": ("x", "y")}
    assert schema.resolve({"exact": False})["fast"] is True
    assert schema.to_json(schema.resolve({"arch": ["y"]}))["arch"] == ["y"]
    with pytest.raises(OptionError, match="demo option math must be one of 'a', 'b', 'c', got 'd'"):
        schema.parse({"math": "d"})
    with pytest.raises(OptionError, match="demo has no codegen option 'other'"):
        schema.parse({"other": 1}, strict=True)
    with pytest.raises(OptionError, match="demo options fast and exact are both set and disagree"):
        schema.parse({"fast": False, "exact": False})
    with pytest.raises(ValueError, match="negates must name a bool option"):
        OptionSchema((CodegenOption("exact", "bool", True, "", negates="fast"),))
    with pytest.raises(ValueError, match="needs choices"):
        CodegenOption("math", "choice", "a", "")


def test_a_float_option_is_a_finite_number_above_its_bound():
    schema = OptionSchema((CodegenOption("eps", "float", 1e-5, "a float", above=0.0),), backend="demo")
    assert schema.resolve({}) == {"eps": 1e-5}
    assert schema.resolve({"eps": "2.5e-6"}) == {"eps": 2.5e-6} and schema.resolve({"eps": 3}) == {"eps": 3.0}
    for bad in ("0", -1.0, "nan", "inf", "tiny", True, [1e-5]):
        with pytest.raises(OptionError, match="demo option eps must be a finite number > 0, got"):
            schema.parse({"eps": bad})
    option = schema.get("eps")
    assert option.text(1e-6) == "1e-06" and option.expected() == "a finite number > 0"
    assert CodegenOption("x", "float", 0.0, "").expected() == "a finite number"


def test_rms_eps_on_the_command_line(tmp_path):
    bad = run("partition", SAMPLES / "mlp_fp16.relax", "--backend", "cutlass", "-o", tmp_path / "bad",
              "--codegen-option", "cutlass.rms_eps=0")
    assert bad.exit_code == 2 and "cutlass option rms_eps must be a finite number > 0, got '0'" in bad.stderr
    ok = run("partition", SAMPLES / "mlp_fp16.relax", "--backend", "cutlass", "-o", tmp_path / "ok",
             "--codegen-option", "cutlass.rms_eps=1e-6")
    assert ok.exit_code == 0, ok.output
    manifest = json.loads((tmp_path / "ok" / "manifest.json").read_text())
    assert manifest["codegen_options"]["cutlass"]["rms_eps"] == 1e-06


# --------------------------------------------------------------------------- byocc list
def test_list_shows_patterns_checks_code_support_and_options():
    result = run("list")
    assert result.exit_code == 0, result.output
    text = result.stdout
    assert text.index("cublas: 10 patterns") < text.index("cutlass: 79 patterns")
    lines = text.splitlines()
    rms = next(line for line in lines if " cutlass.rms_norm " in line)
    assert rms.split()[:3] == ["1", "cutlass.rms_norm", "yes"]
    assert "check_rms_norm: the called function's name contains rms_norm." in rms
    matmul = next(line for line in lines if line.split()[1:2] == ["cutlass.matmul"])
    assert matmul.split()[:3] == ["75", "cutlass.matmul", "yes"]
    assert "check_matmul: no leak; dtypes; residual rule; batch rule on lhs/rhs." in matmul
    assert "  codegen options (--codegen-option cutlass.KEY=VALUE):" in lines
    assert any(line.split()[:3] == ["fp32_math", "ieee", "'ieee'"] for line in lines)
    assert any(line.split()[:2] == ["arch", "sm_90a,sm_80"] for line in lines)


def test_list_json_and_the_backends_alias():
    result = run("list", "--json")
    assert result.exit_code == 0
    doc = json.loads(result.stdout)
    by_name = {b["name"]: b for b in doc["backends"]}
    cublas, cutlass = by_name["cublas"], by_name["cutlass"]
    assert [p["name"] for p in cutlass["patterns"]] == [e.name for e in get_backend("cutlass").patterns()]
    assert [p["rank"] for p in cublas["patterns"]] == list(range(1, 11))
    generated = {p["name"]: p["generated"] for p in cublas["patterns"]}
    assert generated["cublas.matmul_bias_gelu"] is True and generated["cublas.matmul_transposed_dequantize"] is False
    generated = {p["name"]: p["generated"] for p in cutlass["patterns"]}
    assert generated["cutlass.matmul_bias_residual_add_relu"] is True
    assert generated["cutlass.layer_norm"] is True and generated["cutlass.rms_norm"] is True
    assert generated["cutlass.attention"] and generated["cutlass.attention_bias"]
    assert generated["cutlass.stacked_attention"] and generated["cutlass.conv2d"]
    assert not any(generated[n] for n in ("cutlass.attention_var_len", "cutlass.decode_matmul"))
    assert cutlass["preferred_layout"] == "NHWC" and cutlass["rewrites"] == ["rewrite_attention"]
    assert cublas["codegen_options"][2] == {
        "key": "fp32_math", "kind": "choice", "choices": ["ieee", "tf32"], "default": "ieee",
        "values": "'ieee' or 'tf32'", "help": cublas["codegen_options"][2]["help"]}
    assert cutlass["codegen_options"][0]["default"] == ["sm_90a", "sm_80"]
    alias = run("backends", "cublas", "--json")
    assert json.loads(alias.stdout) == {"backends": [cublas]}
    commands = [line.split()[0] for line in run("--help").stdout.split("Commands:")[1].splitlines()
                if line.startswith("  ") and not line.startswith("   ")]
    assert "list" in commands and "backends" not in commands  # the alias is not listed


def test_list_of_an_unknown_backend_is_a_usage_error():
    result = run("list", "cutlas")
    assert result.exit_code == 2
    assert "unknown backend 'cutlas' (known: cublas, cutlass); did you mean 'cutlass'?" in result.stderr


@pytest.mark.parametrize(("backend", "model", "extra"), [
    ("cutlass", "transformer_block_fp16.relax", ["--path", "merge"]),
    ("cublas", "mlp_fp16.relax", []),
    ("cutlass", "conv2d_nhwc_fp16.relax", []),
    ("cutlass", "attention_fp16.relax", []),
])
def test_supports_agrees_with_the_codegen(tmp_path, backend, model, extra):
    """What ``byocc list`` says the codegen generates is what ``-o`` does: every composite
    of a written entry is marked generated; a model with a refused composite fails."""
    record = get_backend(backend)
    result = run("partition", SAMPLES / model, "--backend", backend, *extra, "-o", tmp_path / "o")
    if result.exit_code == 0:
        manifest = json.loads((tmp_path / "o" / "manifest.json").read_text())
        composites = {c for f in manifest["functions"] for c in f["composites"]}
        assert composites and all(record.generates(c) for c in composites)
    else:
        assert result.exit_code == 1
        assert any(not record.generates(e.name) and e.name in result.stderr for e in record.patterns()), \
            result.stderr
