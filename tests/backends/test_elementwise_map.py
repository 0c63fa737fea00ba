"""Index-mapped elementwise kernels (docs/codegen.md#data-movement-and-several-outputs): composites
with data-movement ops (permute_dims, reshape, flatten, concat, strided_slice, split, broadcast_to,
expand_dims, squeeze) or several outputs get one kernel computing each element's source index.

The generated ``<name>_element`` is ``__host__ __device__``: compiled for the host with nvcc and
run over every output element, it must give what byocc's numpy interpreter gives for the same
function (static and symbolic shapes). The corpus composites that were refused (random_p023's
permute_dims, random_p074's reshape, random_p085's concat, under the cublas prefix) and tuple
results through partition get code whose units compile."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from byocc.backends.codegen import CodegenError
from byocc.backends.cublas.codegen import codegen as cublas_codegen
from byocc.backends.cuda.common import common_sources
from byocc.backends.cuda.elementwise_map import header_source as map_header
from byocc.backends.cuda.elementwise_map import map_plan
from byocc.backends.cuda.generic import ctype
from byocc.backends.cuda.generic import header_source
from byocc.backends.cutlass.codegen import codegen as cutlass_codegen
from byocc.backends.toolchain import find_optional_cublaslt
from byocc.dpl import is_op
from byocc.dpl import is_tuple
from byocc.dpl import wildcard
from byocc.ops.reference import dtype_name
from byocc.runtime import Interpreter
from byocc.text import parse_module
from byocc.text import read_file
from byocc.transform import partition

NVCC = shutil.which("nvcc")
needs_nvcc = pytest.mark.skipif(NVCC is None, reason="nvcc not installed")
CORPUS = Path(__file__).resolve().parents[3] / "shared" / "conformance" / "cases"
CODEGENS = {"cutlass": cutlass_codegen, "cublas": cublas_codegen}


def module_text(params: str, body: list[str], ret: str = "out") -> str:
    lines = ["# from tvm.script import ir as I", "# from tvm.script import relax as R", "",
             "@I.ir_module", "class Module:", "    @R.function", f"    def main({params}):",
             "        with R.dataflow():"]
    lines += [f"            {b}" for b in body]
    lines += [f"            R.output({ret})", f"        return {ret}", ""]
    return "\n".join(lines)


def _t(shape, dtype="float32") -> str:
    dims = ", ".join(str(d) if isinstance(d, int) else f'"{d}"' for d in shape)
    return f'R.Tensor(({dims}{"," if len(shape) == 1 else ""}), dtype="{dtype}")'


rng = np.random.default_rng(7)


def f32(*shape):
    return rng.uniform(-3, 3, shape).astype(np.float32)


# (label, params text, body, returned name, inputs) -- main's body is the composite
CASES = [
    ("permute_add", f"x: {_t((2, 3, 4))}, b: {_t((3,))}",
     ["p = R.permute_dims(x, axes=[2, 0, 1])", "out = R.add(p, b)"], "out", [f32(2, 3, 4), f32(3)]),
    ("permute_default_then_relu", f"x: {_t((2, 3, 5))}",
     ["p = R.permute_dims(x, axes=None)", "out = R.nn.relu(p)"], "out", [f32(2, 3, 5)]),
    ("reshape_gelu_tanh", f"x: {_t((4, 6))}",
     ["g = R.nn.gelu_tanh(x)", "out = R.reshape(g, R.shape([2, 3, 4]))"], "out", [f32(4, 6)]),
    ("reshape_of_permute", f"x: {_t((2, 3, 4))}, y: {_t((4, 6))}",
     ["p = R.permute_dims(x, axes=[2, 0, 1])", "r = R.reshape(p, R.shape([4, 6]))", "out = R.subtract(r, y)"],
     "out", [f32(2, 3, 4), f32(4, 6)]),
    ("concat2_axis1", f"a: {_t((2, 3))}, b: {_t((2, 5))}",
     ["t = (a, b)", "out = R.concat(t, axis=1)"], "out", [f32(2, 3), f32(2, 5)]),
    ("concat3_relu_axis0", f"a: {_t((1, 4))}, b: {_t((2, 4))}, c: {_t((3, 4))}",
     ["cc = R.concat((a, b, c), axis=0)", "out = R.nn.relu(cc)"], "out", [f32(1, 4), f32(2, 4), f32(3, 4)]),
    ("concat_of_computed_fields", f"a: {_t((3, 2))}, b: {_t((3, 2))}",
     ["e = R.exp(a)", "n = R.negative(b)", "cc = R.concat((e, n, a), axis=-1)", "out = R.multiply(cc, cc)"],
     "out", [f32(3, 2), f32(3, 2)]),
    ("strided_slice", f"x: {_t((6, 8))}",
     ["s = R.strided_slice(x, (R.prim_value(0), R.prim_value(1)), (R.prim_value(1), R.prim_value(-1)), "
      "(R.prim_value(5), R.prim_value(-8)), (R.prim_value(2), R.prim_value(-2)))", "out = R.sigmoid(s)"],
     "out", [f32(6, 8)]),
    ("split_items", f"x: {_t((4, 9))}",
     ["sp = R.split(x, indices_or_sections=[2, 5], axis=1)", "a = sp[0]", "b = sp[2]",
      "out = R.add(R.concat((b, a), axis=1), R.const(1.5, \"float32\"))"], "out", [f32(4, 9)]),
    ("broadcast_expand_squeeze", f"x: {_t((3, 1, 4))}, y: {_t((4,))}",
     ["s = R.squeeze(x, axis=[1])", "e = R.expand_dims(y, axis=[0])", "bt = R.broadcast_to(e, R.shape([3, 4]))",
      "f = R.flatten(R.multiply(s, bt))", "out = R.expand_dims(f, axis=[0, 2])"], "out", [f32(3, 1, 4), f32(4)]),
    ("two_outputs_same_shape", f"x: {_t((8, 32))}, y: {_t((8, 32))}",
     ["d = R.divide(x, y)", "a = R.add(d, x)", "out = (a, d)"], "out", [f32(8, 32), f32(8, 32) + 5]),
    ("two_outputs_of_different_shapes", f"x: {_t((3, 4))}, y: {_t((4,))}",
     ["m = R.multiply(y, y)", "a = R.add(x, m)", "out = (a, m, x)"], "out", [f32(3, 4), f32(4)]),
    ("f16_permute_concat", f"x: {_t((2, 3), 'float16')}, y: {_t((3, 2), 'float16')}",
     ["p = R.permute_dims(y, axes=None)", "out = R.concat((x, p), axis=0)"], "out",
     [f32(2, 3).astype(np.float16), f32(3, 2).astype(np.float16)]),
]

SYMBOLIC = [
    ("symbolic_reshape_permute", f"x: {_t(('n', 6))}, b: {_t((3,))}",
     ["r = R.reshape(x, R.shape([n, 2, 3]))", "p = R.permute_dims(r, axes=[1, 0, 2])", "out = R.add(p, b)"],
     "out", {"n": 5}),
    ("symbolic_concat", f"a: {_t(('n', 2))}, b: {_t(('n', 3))}",
     ["out = R.concat((a, b), axis=1)"], "out", {"n": 4}),
    ("symbolic_concat_axis0", f"a: {_t(('n', 2))}, b: {_t(('m', 2))}",
     ["cc = R.concat((a, b), axis=0)", "out = R.nn.relu(cc)"], "out", {"n": 3, "m": 2}),
]


def _symbolic_inputs(params: str, sizes: dict) -> list:
    mod = parse_module(module_text(params, ["out = R.add(R.const(0, \"float32\"), R.const(0, \"float32\"))"]))
    arrays = []
    for p in mod["main"].params:
        shape = [d if isinstance(d, int) else sizes[str(d.name)] for d in p.struct_info.shape]
        arrays.append(f32(*shape))
    return arrays


def _write_headers(folder: Path) -> None:
    for src in [header_source(), map_header()] + [s for s in common_sources() if s.path.endswith(".h")]:
        p = folder / src.path
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(src.text)


def _run_on_host(tmp_path: Path, cases) -> list:
    """Generate each case's kernel (``(label, module, inputs)``: the module's ``main`` is the
    composite), run ``<name>_element`` on the host over every output element, and return
    [(label, got outputs, interpreter outputs)]."""
    _write_headers(tmp_path)
    units: dict[str, str] = {}
    prog_main: list[str] = []
    expected = []
    for k, (label, mod, inputs) in enumerate(cases):
        func = mod["main"]
        plan = map_plan(func, f"case {label}")
        units[plan.name] = plan.source.text
        want = Interpreter(mod).run(list(inputs), entry="main")
        wants = [np.asarray(w) for w in (want if isinstance(want, (tuple, list)) else [want])]
        sizes = {}
        for p, arr in zip(func.params, inputs):
            for d, n in zip(p.struct_info.shape, arr.shape):
                if not isinstance(d, int):
                    sizes[d.name] = n
        prog_main.append(f"  {{  // case {k}: {label}")
        prog_main.append("    EwMapArgs a{};")
        prog_main.append(f"    a.numel = {max(w.size for w in wants)};")
        for j, d in enumerate(plan.dims):
            prog_main.append(f"    a.dims[{j}] = {sizes[d.name]};")
        for j, inp in enumerate(plan.inputs):
            arr = inputs[inp.param] if inp.param is not None else np.asarray(inp.constant.data)
            arr = np.ascontiguousarray(arr)
            arr.tofile(tmp_path / f"c{k}_in{j}.bin")
            ct = ctype(dtype_name(arr.dtype))
            prog_main.append(f"    static {ct} in{j}[{max(arr.size, 1)}]; load(\"{tmp_path}/c{k}_in{j}.bin\", in{j}, {arr.size});")
            prog_main.append(f"    a.in[{j}] = in{j};")
        for j, w in enumerate(wants):
            ct = ctype(dtype_name(w.dtype))
            prog_main.append(f"    static {ct} out{j}[{max(w.size, 1)}]; a.out[{j}] = out{j};")
        prog_main.append(f"    for (int64_t i = 0; i < a.numel; ++i) {plan.name}_element(a, i);")
        for j, w in enumerate(wants):
            prog_main.append(f"    save(\"{tmp_path}/c{k}_out{j}.bin\", out{j}, {w.size});")
        prog_main.append("  }")
        expected.append((label, wants))
    prog = ["#include <stdio.h>", "#include <stdlib.h>"]
    for name, text in units.items():
        (tmp_path / "src" / f"{name}.cu").write_text(text)
        prog.append(f'#include "{name}.cu"')
    # the units' launch check is defined in runtime.cu; the host run never launches
    prog += ["int byocc::check_launch(const char*) { return BYOCC_OK; }", "using namespace byocc::generic;",
             "template <typename T> static void load(const char* path, T* buf, size_t n) {",
             '  FILE* f = fopen(path, "rb"); if (!f || fread(buf, sizeof(T), n, f) != n) { printf("read %s\\n", path); exit(2); } fclose(f);',
             "}", "template <typename T> static void save(const char* path, const T* buf, size_t n) {",
             '  FILE* f = fopen(path, "wb"); fwrite(buf, sizeof(T), n, f); fclose(f);', "}", "int main() {",
             *prog_main, "  return 0;", "}"]
    (tmp_path / "map.cu").write_text("\n".join(prog) + "\n")
    exe = tmp_path / "map"
    proc = subprocess.run([NVCC, "-std=c++17", "-Werror", "all-warnings", "-I", str(tmp_path / "src"),
                           str(tmp_path / "map.cu"), "-o", str(exe)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-5000:]
    subprocess.run([str(exe)], check=True)
    out = []
    for k, (label, wants) in enumerate(expected):
        gots = [np.fromfile(tmp_path / f"c{k}_out{j}.bin", dtype=w.dtype).reshape(w.shape) for j, w in enumerate(wants)]
        out.append((label, gots, wants))
    return out


@needs_nvcc
def test_index_mapping_matches_the_interpreter_on_the_host(tmp_path):
    cases = [(label, parse_module(module_text(params, body, ret)), inputs) for label, params, body, ret, inputs in CASES]
    cases += [(label, parse_module(module_text(params, body, ret)), _symbolic_inputs(params, sizes))
              for label, params, body, ret, sizes in SYMBOLIC]
    cases += _corpus_composites()
    failures = []
    for label, gots, wants in _run_on_host(tmp_path, cases):
        for j, (got, want) in enumerate(zip(gots, wants)):
            tol = 2e-3 if want.dtype == np.float16 else 1e-5
            if not np.allclose(got.astype(np.float64), want.astype(np.float64), rtol=tol, atol=tol):
                failures.append(f"{label} output {j}: got {got.ravel()[:8]} want {want.ravel()[:8]}")
    assert not failures, "\n".join(failures)


def _corpus_composites() -> list:
    """The data-movement composites of random_p023, random_p074 and random_p085 (cublas
    prefix, constants bound and not), each as a module whose main is the composite."""
    from byocc.backends import load_pattern_file
    from byocc.ir import Function
    from byocc.ir import IRModule

    out = []
    for case in ("random_p023", "random_p074", "random_p085"):
        folder = CORPUS / case
        if not folder.is_dir():
            continue
        for bind in (True, False):
            patterns = [p for p in load_pattern_file(folder / "patterns.py") if p.name.startswith("cublas.")]
            parted = partition(read_file(folder / "input.relax"), patterns, path="annotate", bind_constants=bind)
            for name in sorted(parted.names()):
                f = parted[name]
                if not isinstance(f, Function) or f.attrs.get("Codegen") != "cublas":
                    continue
                for b in (b for block in f.body.blocks for b in block.bindings):
                    comp = b.value
                    if isinstance(comp, Function) and any(n in str(comp.attrs.get("Composite")) for n in
                                                          ("permute_dims", "reshape", "concat")):
                        inputs = [rng.uniform(-2, 2, [int(d) for d in p.struct_info.shape]).astype(p.struct_info.dtype)
                                  for p in comp.params]
                        out.append((f"{case}/{name}/{'bind' if bind else 'nobind'}", IRModule({"main": comp}), inputs))
    return out


def test_plan_has_one_kernel_and_no_copy_per_op():
    """A chain of data-movement ops is one kernel whose body has one load per input read and
    no intermediate buffer: permute + reshape + subtract reads x and y once each."""
    label, params, body, ret, _ = CASES[3]
    plan = map_plan(parse_module(module_text(params, body, ret))["main"], label)
    text = plan.source.text
    assert text.count("Num<float>::load(") == 2
    assert text.count("a.out[") == 1
    assert "reshape" in " ".join(plan.formula) and "permute_dims" in " ".join(plan.formula)


def test_several_outputs_share_one_evaluation():
    label, params, body, ret, _ = CASES[10]
    plan = map_plan(parse_module(module_text(params, body, ret))["main"], label)
    text = plan.source.text
    assert len(plan.out_sinfos) == 2 and "a.out[0]" in text and "a.out[1]" in text
    assert text.count(" / ") == 1  # the divide is computed once for both outputs


def test_unsupported_op_in_a_moving_composite_is_named():
    mod = parse_module(module_text(f"x: {_t((2, 3))}", ["p = R.permute_dims(x, axes=None)",
                                                          "out = R.nn.softmax(p, axis=-1)"]))
    with pytest.raises(CodegenError, match=r"first unsupported op is relax.nn.softmax"):
        map_plan(mod["main"], "function f, composite c")


# --------------------------------------------------------------------------- through partition
def _partition(mod, patterns, backend, path="annotate", bind=True):
    out = partition(mod, patterns, path=path, bind_constants=bind, run_codegen=True,
                    codegens={backend: CODEGENS[backend]})
    return list(out.attrs.get("external_mods", ()))


def _nvcc_units(folder: Path, modules) -> None:
    seen = {}
    for gm in modules:
        for src in list(common_sources()) + list(gm.sources):
            seen[src.path] = src
    for src in seen.values():
        p = folder / src.path
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(src.text)
    cublaslt = find_optional_cublaslt()
    for path, src in seen.items():
        if src.unit != "light" or not (path.startswith("src/kernels/ewm_") or path.startswith("src/funcs/")):
            continue
        if path.startswith("src/funcs/") and "byocc_cublaslt.h" in src.text and cublaslt is None:
            continue  # a cuBLAS wrapper needs the cuBLASLt headers (the ewm units still compile)
        cmd = [NVCC, "-std=c++17", "-O1", "-Xcompiler=-fPIC", "-gencode=arch=compute_80,code=sm_80", "-Werror",
               "all-warnings", "-I", str(folder / "src"), *(cublaslt.include_flags if cublaslt else ()), "-c",
               str(folder / path), "-o", str(folder / (Path(path).name + ".o"))]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        assert proc.returncode == 0, f"{path}:\n{proc.stderr[-4000:]}"


def _corpus(case: str):
    from byocc.backends import load_pattern_file

    folder = CORPUS / case
    if not folder.is_dir():
        pytest.skip(f"conformance case {case} not present")
    return read_file(folder / "input.relax"), load_pattern_file(folder / "patterns.py")


@pytest.mark.parametrize("case,composite", [("random_p023", "cublas.e0_permute_dims"),
                                            ("random_p074", "cublas.e0_reshape"),
                                            ("random_p085", "cublas.e1_concat2")])
@pytest.mark.parametrize("path", ["annotate", "merge"])
def test_corpus_data_movement_composites_get_code(case, composite, path, tmp_path):
    mod, patterns = _corpus(case)
    patterns = [p for p in patterns if p.name.startswith("cublas.")]  # the other prefixes have no codegen
    modules = _partition(mod, patterns, "cublas", path=path, bind=False)
    entries = [e for gm in modules for e in gm.entries if composite in e.composites]
    assert entries, f"no entry for {composite}"
    for e in entries:
        step = e.steps[list(e.composites).index(composite)]
        assert step["kind"] == "elementwise" and step.get("index_mapped") is True
        assert any(k.startswith("src/kernels/ewm_") for k in e.kernel_sources)
    assert any(s.path == "src/byocc_ewmap.h" for gm in modules for s in gm.sources)
    if NVCC is not None and path == "annotate":
        _nvcc_units(tmp_path, modules)


TUPLE_EW = module_text(f"x: {_t((8, 32))}, y: {_t((8, 32))}",
                       ["d = R.divide(x, y)", "a = R.add(d, x)", "out = R.multiply(a, d)"])
TUPLE_MM = module_text(f"x: {_t((16, 32), 'float16')}, w: {_t((32, 32), 'float16')}, b: {_t((32,), 'float16')}",
                       ["mm = R.matmul(x, w, out_dtype=\"void\")", "biased = R.add(mm, b)", "act = R.nn.relu(biased)",
                        "out = R.multiply(mm, act)"])


@pytest.mark.parametrize("backend", ["cutlass", "cublas"])
def test_intermediate_used_outside_is_a_second_output_of_one_kernel(backend, tmp_path):
    """TVM returns an intermediate used outside the composite as an extra tuple field
    (intermediate_used_outside_custom_nocheck): the elementwise kernel writes both."""
    pats = [(f"{backend}.divide_add", is_op("relax.add")(is_op("relax.divide")(wildcard(), wildcard()), wildcard()))]
    modules = _partition(parse_module(TUPLE_EW), pats, backend)
    [entry] = [e for gm in modules for e in gm.entries]
    assert [s["kind"] for s in entry.steps] == ["elementwise"] and entry.steps[0]["outputs"] == 2
    assert len(entry.outputs) == 2
    wrapper = next(s.text for gm in modules for s in gm.sources if s.path == entry.source_file)
    assert "ea.out[0] = byocc::data_of(args[2]);" in wrapper and "ea.out[1] = byocc::data_of(args[3]);" in wrapper
    if NVCC is not None:
        _nvcc_units(tmp_path, modules)


@pytest.mark.parametrize("backend", ["cutlass", "cublas"])
def test_matmul_composite_with_an_escaping_product_is_a_gemm_and_an_elementwise_step(backend, tmp_path):
    pats = [(f"{backend}.matmul_bias_relu",
             is_op("relax.nn.relu")(is_op("relax.add")(is_op("relax.matmul")(wildcard(), wildcard()), wildcard())))]
    modules = _partition(parse_module(TUPLE_MM), pats, backend)
    [entry] = [e for gm in modules for e in gm.entries]
    assert [s["kind"] for s in entry.steps] == ["gemm", "elementwise"]
    assert len(entry.outputs) == 2  # (mm, relu(mm + b)): the GEMM writes output 0, the kernel output 1
    wrapper = next(s.text for gm in modules for s in gm.sources if s.path == entry.source_file)
    assert "uint64_t temp" not in wrapper  # no temporary in scratch: both results are outputs
    if NVCC is not None:
        _nvcc_units(tmp_path, modules)


def test_cublas_silu_and_residual_epilogues_run_as_gemm_then_elementwise():
    text = module_text(f"x: {_t((16, 32), 'float16')}, w: {_t((32, 64), 'float16')}, b: {_t((64,), 'float16')}",
                       ["mm = R.matmul(x, w, out_dtype=\"void\")", "bb = R.add(mm, b)", "out = R.nn.silu(bb)"])
    pats = [("cublas.matmul_bias_silu", is_op("relax.nn.silu")(is_op("relax.add")(
        is_op("relax.matmul")(wildcard(), wildcard()), wildcard())))]
    [gm] = _partition(parse_module(text), pats, "cublas")
    [entry] = gm.entries
    assert [s["kind"] for s in entry.steps] == ["gemm", "elementwise"]
    assert "silu" in entry.steps[1]["formula"] and "add" in entry.steps[1]["formula"]
    text = module_text(f"x: {_t((16, 32), 'float16')}, w: {_t((32, 64), 'float16')}, r: {_t((16, 64), 'float16')}",
                       ["mm = R.matmul(x, w, out_dtype=\"void\")", "out = R.multiply(mm, r)"])
    pats = [("cublas.matmul_scale", is_op("relax.multiply")(is_op("relax.matmul")(wildcard(), wildcard()), wildcard()))]
    [gm] = _partition(parse_module(text), pats, "cublas")
    assert [s["kind"] for s in gm.entries[0].steps] == ["gemm", "elementwise"]
    # a full (16, 64) "bias" is no cuBLASLt bias vector: the kernel adds it; a (64,) one stays fused
    for bias, kinds in (((16, 64), ["gemm", "elementwise"]), ((64,), ["gemm"])):
        text = module_text(f"x: {_t((16, 32), 'float16')}, w: {_t((32, 64), 'float16')}, b: {_t(bias, 'float16')}",
                           ["mm = R.matmul(x, w, out_dtype=\"void\")", "out = R.add(mm, b)"])
        pats = [("cublas.matmul_bias", is_op("relax.add")(is_op("relax.matmul")(wildcard(), wildcard()), wildcard()))]
        [gm] = _partition(parse_module(text), pats, "cublas")
        assert [s["kind"] for s in gm.entries[0].steps] == kinds, bias


def test_concat_pattern_with_is_tuple_gets_one_kernel():
    text = module_text(f"a: {_t((2, 3))}, b: {_t((2, 3))}", ["cc = R.concat((a, b), axis=0)", "out = R.nn.relu(cc)"])
    pats = [("cutlass.concat_relu", is_op("relax.nn.relu")(is_op("relax.concat")(is_tuple([wildcard(), wildcard()]))))]
    [gm] = _partition(parse_module(text), pats, "cutlass")
    [entry] = gm.entries
    assert entry.steps[0]["index_mapped"] is True and [a.name for a in entry.args] == ["a", "b"]


def test_nested_tuple_results_and_tuple_parameters_are_clear_errors():
    """What stays refused says why: a split's whole tuple returned from the composite
    (split_then_two_matmuls under a cutlass prefix), a tuple bound outside the composite."""
    text = module_text(f"x: {_t((16, 128), 'float16')}, w: {_t((64, 32), 'float16')}",
                       ["parts = R.split(x, indices_or_sections=2, axis=1)", "p0 = parts[0]", "p1 = parts[1]",
                        "m = R.matmul(p0, w, out_dtype=\"void\")", "n = R.matmul(p1, w, out_dtype=\"void\")",
                        "out = R.add(m, n)"])
    from byocc.dpl import is_tuple_get_item

    pats = [("cutlass.split0_matmul", is_op("relax.matmul")(is_tuple_get_item(is_op("relax.split")(wildcard()), 0),
                                                            wildcard()))]
    with pytest.raises(CodegenError, match=r"composite cutlass.split0_matmul returns a nested tuple"):
        _partition(parse_module(text), pats, "cutlass")
    text = module_text(f"a: {_t((2, 3))}, b: {_t((2, 3))}", ["t = (a, b)", "cc = R.concat(t, axis=0)",
                                                          "out = R.nn.relu(cc)"])
    pats = [("cutlass.concat_relu", is_op("relax.nn.relu")(is_op("relax.concat")(is_tuple([wildcard(), wildcard()]))))]
    with pytest.raises(CodegenError, match=r"parameter 0 \(t\) is a tuple"):
        _partition(parse_module(text), pats, "cutlass")


def test_too_deep_or_too_large_composites_are_codegen_errors():
    body = ["v0 = R.permute_dims(x, axes=None)"] + [f"v{k} = R.exp(v{k - 1})" for k in range(1, 260)] + ["out = R.exp(v259)"]
    mod = parse_module(module_text(f"x: {_t((2, 3))}", body))
    with pytest.raises(CodegenError, match=r"deeper than 200 ops"):
        map_plan(mod["main"], "function f, composite c")
    body = ["c0 = R.permute_dims(x, axes=None)"] + [f"c{k} = R.concat((c{k - 1}, c{k - 1}), axis=0)" for k in range(1, 16)]
    body.append("out = R.exp(c15)")
    mod = parse_module(module_text(f"x: {_t((1, 1))}", body))
    with pytest.raises(CodegenError, match=r"exceed 20000 statements"):
        map_plan(mod["main"], "function f, composite c")


@pytest.mark.parametrize("backend", ["cutlass", "cublas"])
@pytest.mark.parametrize("case,composite,kinds", [
    ("intermediate_used_outside_custom_nocheck", "matmul_bias_relu", ["gemm", "elementwise"]),
    ("random_p100", "e0_divide_add", ["elementwise"]),
    ("random_p094", "e3_matmul_bias_silu", ["gemm", "elementwise"]),
    ("concat_tuple_pattern", "concat3", ["elementwise"]),
])
def test_corpus_pattern_files_offered_to_a_backend_get_code(backend, case, composite, kinds):
    """A corpus pattern file's composites (other prefixes renamed to the backend): tuple results
    (an intermediate used outside) and concats get code, one step per piece."""
    mod, patterns = _corpus(case)
    for p in patterns:
        p.name = f"{backend}.{p.name.split('.', 1)[1]}"
    modules = _partition(mod, patterns, backend)
    name = f"{backend}.{composite}"
    per_entry = [[s["kind"] for s in e.steps if s["composite"] == name] for gm in modules for e in gm.entries]
    assert kinds in per_entry, per_entry
