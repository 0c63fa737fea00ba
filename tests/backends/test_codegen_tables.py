"""Every GEMM composite of the cutlass and cublas tables generates code from the CLI
(`byocc partition -o`): the composite that formed is the one the graph spells, the manifest
lists it with its entry point, and the wrapper and kernel sources it names are on disk."""

from __future__ import annotations

import json

import pytest
from conftest import run_cli

ACTS = (None, "relu", "gelu")


def family(backend: str):
    for transposed in (False, True):
        yield transposed, False, None, None, None
        for act in ACTS:
            yield transposed, True, act, None, None
            if backend == "cutlass":
                for op in ("add", "multiply"):
                    for post in (None, "relu"):
                        yield transposed, True, act, op, post


def composite_name(backend, transposed, bias, act, op, post) -> str:
    name = f"{backend}.matmul" + ("_transposed" if transposed else "")
    if bias:
        name += "_bias"
    if act:
        name += f"_{act}"
    if op:
        name += f"_residual_{op}"
    if post:
        name += "_relu"
    return name


def function_text(i, transposed, bias, act, op, post, dtype="float16") -> str:
    m, k, n = 64, 32, 48
    rhs = f"({n}, {k})" if transposed else f"({k}, {n})"
    params = [f'x: R.Tensor(({m}, {k}), dtype="{dtype}")', f'w: R.Tensor({rhs}, dtype="{dtype}")']
    if bias:
        params.append(f'b: R.Tensor(({n},), dtype="{dtype}")')
    if op:
        params.append(f'r: R.Tensor(({m}, {n}), dtype="{dtype}")')
    body = []
    cur = "w"
    if transposed:
        body.append("wt = R.permute_dims(w)")
        cur = "wt"
    body.append(f"y = R.matmul(x, {cur}, out_dtype=None)")
    v = "y"
    for stmt, name in ((bias and "R.add({}, b)", "z"), (act and f"R.nn.{act}({{}})", "a"),
                       (op and f"R.{op}({{}}, r)", "s"), (post and "R.nn.relu({})", "o")):
        if stmt:
            body.append(f"{name} = {stmt.format(v)}")
            v = name
    lines = "\n".join(f"            {b}" for b in body)
    return (f"    @R.function\n    def f{i}({', '.join(params)}):\n        with R.dataflow():\n"
            f"{lines}\n            R.output({v})\n        return {v}\n")


@pytest.mark.parametrize("backend", ["cutlass", "cublas"])
def test_every_gemm_composite_of_the_table_generates_code(tmp_path, backend):
    cases = list(family(backend))
    text = ("from tvm.script import ir as I\nfrom tvm.script import relax as R\n\n@I.ir_module\nclass Module:\n"
            + "\n".join(function_text(i, *c) for i, c in enumerate(cases)))
    model = tmp_path / "gemms.relax"
    model.write_text(text)
    out = tmp_path / "out"
    result = run_cli("partition", model, "--backend", backend, "-o", out)
    assert result.exit_code == 0, result.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    formed = sorted(c for f in manifest["functions"] for c in f["composites"])
    assert formed == sorted(composite_name(backend, *c) for c in cases)
    for f in manifest["functions"]:
        assert (out / f["source_file"]).is_file()
        for k in f["kernel_sources"]:
            assert (out / k).is_file()
        wrapper = (out / f["source_file"]).read_text()
        assert f'BYOCC_EXPORT int32_t {f["symbol"]}(' in wrapper
        assert f["num_args"] == len(f["args"]) + len(f["outputs"])
    assert (out / "src" / "byocc_abi.h").is_file() and (out / "build.ninja").is_file()
    if backend == "cutlass":
        # every composite has an sm_90a TMA variant at these aligned shapes
        assert all(any(v["arch"] == "sm_90a" for v in f["variants"]) for f in manifest["functions"])
    else:
        assert manifest["uses_cublaslt"] is True
