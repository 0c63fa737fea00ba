"""Fused elementwise composites (spec/backends.md 17.1): the seed's cutlass.multiply, broadcasting
op trees, unsupported ops, determinism, crafted names; the generated units compiled with nvcc."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from byocc.backends import load_pattern_file
from byocc.backends.codegen import CodegenError
from byocc.backends.cuda.common import common_sources
from byocc.backends.cutlass.codegen import codegen
from byocc.dpl import is_op
from byocc.dpl import wildcard
from byocc.text import parse_module
from byocc.text import read_file
from byocc.transform import partition

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "samples"
NVCC = shutil.which("nvcc")
needs_nvcc = pytest.mark.skipif(NVCC is None, reason="nvcc not installed")


def generate(mod, patterns, path="annotate"):
    out = partition(mod, patterns, path=path, run_codegen=True, codegens={"cutlass": codegen})
    mods = list(out.attrs.get("external_mods", ()))
    assert len(mods) == 1
    return mods[0]


def write(module, folder: Path) -> None:
    for src in list(common_sources()) + list(module.sources):
        p = folder / src.path
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(src.text)


def nvcc_compile(folder: Path, paths, defines=()) -> None:
    for rel in paths:
        obj = folder / (Path(rel).name + ".o")
        cmd = [NVCC, "-std=c++17", "-O1", "-Xcompiler=-fPIC", "-gencode=arch=compute_80,code=sm_80",
               "-Werror", "all-warnings", "-I", str(folder / "src"), *defines, "-c", str(folder / rel),
               "-o", str(obj)]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        assert proc.returncode == 0, f"{rel}:\n{proc.stderr[-4000:]}"


def module_text(params: str, body: list[str]) -> str:
    lines = ["# from tvm.script import ir as I", "# from tvm.script import relax as R", "",
             "@I.ir_module", "class Module:", "    @R.function", f"    def main({params}):",
             "        with R.dataflow():"]
    lines += [f"            {b}" for b in body]
    lines += ["            R.output(out)", "        return out", ""]
    return "\n".join(lines)


def test_seed_generates_one_elementwise_unit(tmp_path):
    mod = read_file(SAMPLES / "seed.relax")
    gm = generate(mod, load_pattern_file(SAMPLES / "seed_patterns.py"))
    (entry,) = gm.entries
    assert entry.symbol == "fused_relax_multiply_cutlass"
    assert entry.composites == ("cutlass.multiply",)
    assert [v.impl for v in entry.variants] == ["elementwise"]
    units = [s.path for s in gm.sources if s.path.startswith("src/kernels/")]
    assert len(units) == 1 and units[0].startswith("src/kernels/ew_")
    assert entry.kernel_sources == tuple(units)
    assert entry.num_args == 3 and entry.scratch_bytes == 0
    wrapper = next(s.text for s in gm.sources if s.path == entry.source_file)
    assert "constexpr int32_t kNumArgs = 3;" in wrapper
    assert "(2 inputs, 1 output)" in wrapper
    kernel = next(s.text for s in gm.sources if s.path == units[0])
    assert "const float v0 = (x0 * x1);" in kernel


BIAS_GELU = [("cutlass.bias_gelu", is_op("relax.nn.gelu")(is_op("relax.add")(wildcard(), wildcard())))]


def test_broadcast_tree_in_fp32_for_f16(tmp_path):
    text = module_text('x: R.Tensor((4, 8), dtype="float16"), b: R.Tensor((8,), dtype="float16")',
                       ["y = R.add(x, b)", "out = R.nn.gelu(y)"])
    gm = generate(parse_module(text), BIAS_GELU)
    (entry,) = gm.entries
    kernel = next(s.text for s in gm.sources if s.path == entry.kernel_sources[0])
    # loads widen to fp32, the tree stays fp32, one store rounds to f16
    assert "Num<__half>::load" in kernel and "erff(" in kernel
    assert kernel.count("Num<__half>::store") == 1
    wrapper = next(s.text for s in gm.sources if s.path == entry.source_file)
    assert "broadcast_operand(&ea.in[1], byocc::data_of(args[1]), ea.rank, ea.shape, 1, in1_shape);" in wrapper
    if NVCC:
        write(gm, tmp_path)
        nvcc_compile(tmp_path, [entry.source_file, entry.kernel_sources[0]])


@needs_nvcc
def test_symbolic_and_integer_trees_compile(tmp_path):
    pats = [("cutlass.ew", is_op("relax.where")(
        is_op("relax.less")(wildcard(), wildcard()),
        is_op("relax.floor_divide")(wildcard(), wildcard()), wildcard()))]
    text = module_text('x: R.Tensor(("n", 3), dtype="int32"), y: R.Tensor((1, 3), dtype="int32"), '
                       'z: R.Tensor(("n", 1), dtype="int32")',
                       ["c = R.less(x, y)", "q = R.floor_divide(x, y)", "out = R.where(c, q, z)"])
    gm = generate(parse_module(text), pats)
    (entry,) = gm.entries
    kernel = next(s.text for s in gm.sources if s.path == entry.kernel_sources[0])
    assert "ew_ifloordiv" in kernel and "ew_wrap<int32_t>" in kernel
    wrapper = next(s.text for s in gm.sources if s.path == entry.source_file)
    assert "ea.shape[0] = d.s0;" in wrapper
    write(gm, tmp_path)
    nvcc_compile(tmp_path, [entry.source_file, entry.kernel_sources[0], "src/runtime.cu"])


def test_astype_rounds_and_unsupported_op_is_named():
    pats = [("cutlass.cast_exp", is_op("relax.exp")(is_op("relax.astype")(wildcard())))]
    text = module_text('x: R.Tensor((4, 8), dtype="float32")',
                       ['y = R.astype(x, dtype="float16")', "out = R.exp(y)"])
    gm = generate(parse_module(text), pats)
    kernel = next(s.text for s in gm.sources if s.path.startswith("src/kernels/ew_"))
    assert "ew_cast<__half>(x0)" in kernel and "expf(v0)" in kernel
    pats = [("cutlass.softmax", is_op("relax.nn.softmax")(wildcard()))]
    text = module_text('x: R.Tensor((4, 8), dtype="float32")', ["out = R.nn.softmax(x)"])
    with pytest.raises(CodegenError, match=r"function fused_relax_nn_softmax_cutlass, composite cutlass.softmax: "
                       r".*first unsupported op: relax.nn.softmax"):
        generate(parse_module(text), pats)


def test_op_on_a_dtype_it_has_no_kernel_for_is_a_codegen_error():
    # bitwise_and is in the op table, but has no float form: the error names the op and dtype
    pats = [("cutlass.band", is_op("relax.bitwise_and")(wildcard(), wildcard()))]
    text = module_text('x: R.Tensor((4, 8), dtype="float32"), y: R.Tensor((4, 8), dtype="float32")',
                       ["out = R.bitwise_and(x, y)"])
    with pytest.raises(CodegenError, match=r"composite cutlass.band: cannot generate code: the first unsupported "
                       r"op is relax.bitwise_and \(bitwise op on float32\)"):
        generate(parse_module(text), pats)


def test_equal_trees_share_one_unit_and_output_is_deterministic():
    text = module_text('x: R.Tensor((4, 8), dtype="float16"), b: R.Tensor((8,), dtype="float16"), '
                       'c: R.Tensor((1, 8), dtype="float16")',
                       ["y = R.add(x, b)", "g = R.nn.gelu(y)", "h = R.add(g, c)", "out = R.nn.gelu(h)"])
    gm1 = generate(parse_module(text), BIAS_GELU)
    gm2 = generate(parse_module(text), BIAS_GELU)
    # two functions (the bias shapes differ), one kernel unit (shapes are run-time arguments)
    assert len(gm1.entries) == 2
    assert gm1.entries[0].kernel_sources == gm1.entries[1].kernel_sources
    assert [(s.path, s.text) for s in gm1.sources] == [(s.path, s.text) for s in gm2.sources]


def test_crafted_composite_name_stays_in_comments(tmp_path):
    evil = 'cutlass.x*/ "q"\n#error injected\\'
    pats = [(evil, is_op("relax.multiply")(wildcard(), wildcard()))]
    text = module_text('x: R.Tensor((4, 8), dtype="float32"), y: R.Tensor((4, 8), dtype="float32")',
                       ["out = R.multiply(x, y)"])
    gm = generate(parse_module(text), pats)
    (entry,) = gm.entries
    wrapper = next(s.text for s in gm.sources if s.path == entry.source_file)
    assert "\n#error injected" not in wrapper
    for line in wrapper.splitlines():
        if "injected" in line:
            assert line.lstrip().startswith("//") and "\\" not in line
    if NVCC:
        write(gm, tmp_path)
        nvcc_compile(tmp_path, [entry.source_file])


def test_crafted_global_symbol_is_exported_under_a_safe_name():
    from byocc.backends.cutlass.codegen import codegen as cg
    from byocc.transform.c_symbols import short_symbol

    text = module_text('x: R.Tensor((4, 8), dtype="float32"), y: R.Tensor((4, 8), dtype="float32")',
                       ["out = R.multiply(x, y)"])
    pats = [("cutlass.multiply", is_op("relax.multiply")(wildcard(), wildcard()))]
    out = partition(parse_module(text), pats)
    (name, func), = [(n, f) for n, f in out.functions.items() if getattr(f, "attrs", {}).get("Codegen")]
    crafted = 'f"; system("x"); //'
    [gm] = cg([(crafted, func.with_attrs(global_symbol=crafted))], {}, {})
    [entry] = gm.entries
    assert entry.symbol == short_symbol(crafted) and entry.symbol.startswith("f_system_x_")
    assert entry.global_symbol == crafted
    assert entry.source_file == f"src/funcs/{entry.symbol}.cu"
    assert all("system(" not in s.text for s in gm.sources)


@needs_nvcc
def test_broadcast_and_permute_offsets_match_numpy(tmp_path):
    """The operand indexing every generic kernel uses (offset_of with broadcast_operand /
    permute_operand), run on the host and compared with numpy's broadcast and transpose."""
    import numpy as np

    from byocc.backends.cuda.generic import header_source

    write_src = [header_source()] + [s for s in common_sources() if s.path.endswith(".h")]
    for src in write_src:
        p = tmp_path / src.path
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(src.text)
    cases = [((2, 3, 4), (3, 1)), ((2, 3, 4), (4,)), ((2, 3, 4), (1,)), ((2, 3, 4), (2, 1, 4)),
             ((5, 2, 3), (5, 1, 3)), ((5, 2, 3), (2, 1)), ((2, 3, 4), (1, 1, 2, 3, 4)), ((), ())]
    perms = [((2, 3, 4), (2, 0, 1)), ((4, 5), (1, 0)), ((2, 3, 4, 5), (1, 3, 0, 2))]
    prog = ['#include <stdio.h>', '#include "byocc_generic.cuh"', "using namespace byocc::generic;",
            "static void dump(const Operand& op, int rank, const int64_t* shape) {",
            "  int64_t n = 1; for (int a = 0; a < rank; ++a) n *= shape[a];",
            '  for (int64_t i = 0; i < n; ++i) printf("%lld ", (long long)offset_of(op, i, rank, shape));',
            '  printf("\\n");', "}", "int main() {"]
    for out, inp in cases:
        prog.append(f"  {{ const int64_t o[] = {{{', '.join(map(str, out))}}}; const int64_t s[] = {{{', '.join(map(str, inp))}}};")
        prog.append(f"    Operand op; broadcast_operand(&op, nullptr, {len(out)}, o, {len(inp)}, s); dump(op, {len(out)}, o); }}")
    for shp, axes in perms:
        pshape = [shp[a] for a in axes]
        prog.append(f"  {{ const int64_t s[] = {{{', '.join(map(str, shp))}}}; const int ax[] = {{{', '.join(map(str, axes))}}};")
        prog.append(f"    const int64_t o[] = {{{', '.join(map(str, pshape))}}};")
        prog.append(f"    Operand op; permute_operand(&op, nullptr, {len(shp)}, s, ax); dump(op, {len(shp)}, o); }}")
    prog += ["  return 0;", "}"]
    (tmp_path / "offsets.cu").write_text("\n".join(prog) + "\n")
    exe = tmp_path / "offsets"
    proc = subprocess.run([NVCC, "-std=c++17", "-I", str(tmp_path / "src"), str(tmp_path / "offsets.cu"), "-o", str(exe)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout.splitlines()
    expected = []
    for out, inp in cases:
        src = np.arange(int(np.prod(inp))).reshape(inp)
        if len(inp) > len(out):
            src = src.reshape(inp[len(inp) - len(out):])
        expected.append(np.broadcast_to(src, out).ravel().tolist())
    for shp, axes in perms:
        expected.append(np.transpose(np.arange(int(np.prod(shp))).reshape(shp), axes).ravel().tolist())
    assert [list(map(int, line.split())) for line in lines] == expected


# --------------------------------------------------------------------------- numerics on the host
def _case(op, params, body, gen, attrs=""):
    return (op, params, body, gen)


def _ew_cases():
    import numpy as np

    rng = np.random.default_rng(0)

    def f32(shape, lo=-3.0, hi=3.0):
        return rng.uniform(lo, hi, shape).astype(np.float32)

    def i32(shape, lo=-50, hi=50):
        return rng.integers(lo, hi, shape).astype(np.int32)

    cases = []
    domains = {"log": (0.1, 5), "sqrt": (0.1, 5), "rsqrt": (0.1, 5), "asin": (-0.9, 0.9),
               "acos": (-0.9, 0.9), "atanh": (-0.9, 0.9), "acosh": (1.1, 4), "tan": (-1.2, 1.2)}
    for name in ("exp", "log", "sqrt", "rsqrt", "sin", "cos", "tan", "sinh", "cosh", "tanh", "asin", "acos",
                 "atan", "asinh", "acosh", "atanh", "erf", "sigmoid", "abs", "negative", "floor", "ceil",
                 "round", "trunc", "sign", "square"):
        lo, hi = domains.get(name, (-3, 3))
        cases.append((f"R.{name}(x)", {"x": f32((3, 4), lo, hi)}))
    for name in ("relu", "gelu", "gelu_tanh", "silu", "selu", "softplus"):
        cases.append((f"R.nn.{name}(x)", {"x": f32((3, 4))}))
    cases.append(("R.nn.leakyrelu(x, alpha=0.2)", {"x": f32((3, 4))}))
    for name in ("add", "subtract", "multiply", "divide", "floor_divide", "maximum", "minimum", "mod",
                 "floor_mod", "atan2", "log_add_exp"):
        cases.append((f"R.{name}(x, y)", {"x": f32((3, 4)), "y": f32((4,), 0.5, 2) * np.float32(rng.choice([-1, 1]))}))
    cases.append(("R.power(x, y)", {"x": f32((3, 4), 0.1, 3), "y": f32((1, 4), -2, 2)}))
    for name in ("equal", "not_equal", "less", "less_equal", "greater", "greater_equal"):
        x = f32((3, 4))
        cases.append((f"R.{name}(x, y)", {"x": x, "y": np.where(rng.random((3, 4)) < 0.3, x, f32((3, 4)))}))
    for name in ("add", "subtract", "multiply", "divide", "floor_divide", "mod", "floor_mod", "maximum", "minimum",
                 "bitwise_and", "bitwise_or", "bitwise_xor"):
        y = i32((4,), 1, 9) * rng.choice([-1, 1], (4,)).astype(np.int32)
        cases.append((f"R.{name}(x, y)", {"x": i32((3, 4)), "y": y}))
    cases.append(("R.left_shift(x, y)", {"x": i32((3, 4)), "y": i32((4,), 0, 6)}))
    cases.append(("R.right_shift(x, y)", {"x": i32((3, 4)), "y": i32((4,), 0, 6)}))
    cases.append(("R.add(x, y)", {"x": i32((3, 4), -128, 127).astype(np.int8), "y": i32((3, 4), -128, 127).astype(np.int8)}))
    cases.append(("R.multiply(x, y)", {"x": i32((3, 4), -128, 127).astype(np.int8), "y": i32((4,), -128, 127).astype(np.int8)}))
    cases.append(("R.where(c, x, y)", {"c": rng.random((3, 1)) < 0.5, "x": f32((3, 4)), "y": f32((4,))}))
    cases.append(("R.clip(x, R.prim_value(-1), R.prim_value(2))", {"x": f32((3, 4))}))
    cases.append(('R.astype(x, dtype="float16")', {"x": f32((3, 4))}))
    cases.append(('R.astype(x, dtype="int32")', {"x": f32((3, 4), -20, 20)}))
    cases.append(('R.astype(x, dtype="float32")', {"x": i32((3, 4))}))
    cases.append(("R.nn.gelu(x)", {"x": f32((3, 4)).astype(np.float16)}))
    cases.append(("R.multiply(x, y)", {"x": f32((2, 3, 4)).astype(np.float16), "y": f32((3, 1)).astype(np.float16)}))
    x = f32((3, 4))
    x[0, 0], x[1, 1] = np.nan, np.inf
    for name in ("isnan", "isinf", "isfinite"):
        cases.append((f"R.{name}(x)", {"x": x}))
    return cases


@needs_nvcc
def test_elementwise_ops_match_the_numpy_interpreter_on_the_host(tmp_path):
    """Every op family's generated statement, compiled for the host (the same device helpers
    are __host__ __device__), against byocc's numpy interpreter on the same inputs."""
    import numpy as np

    from byocc.backends.cuda.generic import ctype
    from byocc.backends.cuda.generic import header_source
    from byocc.ops.reference import dtype_name
    from byocc.runtime import Interpreter

    for src in [header_source()] + [s for s in common_sources() if s.path.endswith(".h")]:
        p = tmp_path / src.path
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(src.text)
    prog = ["#include <stdio.h>", '#include "byocc_generic.cuh"', "using namespace byocc::generic;", "",
            "template <typename T> static void load(const char* path, T* buf, size_t n) {",
            '  FILE* f = fopen(path, "rb"); if (!f || fread(buf, sizeof(T), n, f) != n) { printf("read %s\\n", path); exit(2); } fclose(f);',
            "}", "template <typename T> static void save(const char* path, const T* buf, size_t n) {",
            '  FILE* f = fopen(path, "wb"); fwrite(buf, sizeof(T), n, f); fclose(f);', "}", "", "int main() {"]
    expected = []
    for k, (expr, inputs) in enumerate(_ew_cases()):
        params = ", ".join(f'{n}: R.Tensor({tuple(a.shape)!r}, dtype="{dtype_name(a.dtype)}")'.replace(",)", ")")
                           if a.ndim == 1 else f'{n}: R.Tensor({tuple(a.shape)!r}, dtype="{dtype_name(a.dtype)}")'
                           for n, a in inputs.items())
        params = params.replace("R.Tensor((3), ", "R.Tensor((3,), ").replace("R.Tensor((4), ", "R.Tensor((4,), ")
        mod = parse_module(module_text(params, [f"out = {expr}"]))
        want = Interpreter(mod).run([inputs[n] for n in inputs], entry="main")
        op = expr.split("(")[0].replace("R.", "relax.")
        nargs = expr.count(",") + 1 - expr.count("alpha=") - expr.count("dtype=")
        pats = [("cutlass.op", is_op(op)(*[wildcard() for _ in range(nargs)]))]
        gm = generate(mod, pats)
        kernel = next(s.text for s in gm.sources if s.path.startswith("src/kernels/ew_"))
        body = kernel[kernel.index("i += step) {\n") + len("i += step) {\n"):kernel.index("\n  }\n}\n")]
        out_dt = dtype_name(np.asarray(want).dtype)
        prog.append(f"  {{  // case {k}: {expr}")
        prog.append("    EwArgs a{};")
        prog.append(f"    a.rank = {np.ndim(want)};")
        for ax, d in enumerate(np.shape(want)):
            prog.append(f"    a.shape[{ax}] = {d};")
        prog.append(f"    a.numel = {np.size(want)};")
        for j, arr in enumerate(inputs.values()):
            ct = ctype(dtype_name(arr.dtype))
            arr.tofile(tmp_path / f"c{k}_{j}.bin")
            dims = ", ".join(map(str, arr.shape)) or "1"
            prog.append(f"    static {ct} in{j}[{arr.size}]; load(\"{tmp_path}/c{k}_{j}.bin\", in{j}, {arr.size});")
            prog.append(f"    const int64_t s{j}[] = {{{dims}}};")
            prog.append(f"    broadcast_operand(&a.in[{j}], in{j}, a.rank, a.shape, {arr.ndim}, s{j});")
        oct_ = ctype(out_dt)
        prog.append(f"    static {oct_} out[{np.size(want)}]; a.out = out;")
        prog.append("    for (int64_t i = 0; i < a.numel; ++i) {")
        prog.append(body)
        prog.append("    }")
        prog.append(f"    save(\"{tmp_path}/c{k}_out.bin\", out, {np.size(want)});")
        prog.append("  }")
        expected.append((expr, np.asarray(want)))
    prog += ["  return 0;", "}"]
    (tmp_path / "ops.cu").write_text("\n".join(prog) + "\n")
    exe = tmp_path / "ops"
    proc = subprocess.run([NVCC, "-std=c++17", "-I", str(tmp_path / "src"), str(tmp_path / "ops.cu"), "-o", str(exe)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-5000:]
    subprocess.run([str(exe)], check=True)
    failures = []
    for k, (expr, want) in enumerate(expected):
        got = np.fromfile(tmp_path / f"c{k}_out.bin", dtype=want.dtype).reshape(want.shape)
        if want.dtype.kind == "f":
            tol = 2e-3 if want.dtype == np.float16 else 2e-6
            ok = np.allclose(got.astype(np.float64), want.astype(np.float64), rtol=tol, atol=tol, equal_nan=True)
        else:
            ok = np.array_equal(got, want)
        if not ok:
            failures.append(f"{expr}: got {got.ravel()[:6]} want {want.ravel()[:6]}")
    assert not failures, "\n".join(failures)
