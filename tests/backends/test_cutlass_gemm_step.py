"""The CUTLASS GEMM step's modules: the plan (gemm_plan), the wrapper code and kernel units
(gemm_step), the kernel configuration types (config) and the dtype names they read from
byocc.backends.dtypes."""

from __future__ import annotations

import importlib.util
from importlib import resources

import pytest
from test_cutlass_codegen import generate
from test_cutlass_codegen import matmul_module

from byocc.backends.cutlass import codegen
from byocc.backends.cutlass import gemm_plan
from byocc.backends.cutlass import gemm_step
from byocc.backends.cutlass.config import EpilogueSpec
from byocc.backends.cutlass.config import GemmKernelConfig
from byocc.backends.cutlass.kernels import kernel_declarations
from byocc.backends.cutlass.tiles import dtype_bits
from byocc.backends.dtypes import DTYPES
from byocc.backends.dtypes import GEMM_INPUT_DTYPES
from byocc.text import parse_module

needs_cutlass_library = pytest.mark.skipif(
    importlib.util.find_spec("cutlass_library") is None,
    reason="cutlass_library (nvidia-cutlass wheel, the byocc[cuda] extra) is not installed")


def plans(monkeypatch, **kw) -> list:
    """``(plan, WrapperContext, wrapper code)`` of every GEMM step the CUTLASS codegen writes
    for ``matmul_module(**kw)`` (recorded through the per-function code's calls)."""
    seen = []
    real = codegen.gemm_code

    def record(plan, ctx):
        code = real(plan, ctx)
        seen.append((plan, ctx, code))
        return code

    monkeypatch.setattr(codegen, "gemm_code", record)
    generate(parse_module(matmul_module(**kw)))
    assert seen
    return seen


def test_step_kernels_pair_every_unit_with_its_declaration(monkeypatch):
    ((plan, _, _),) = plans(monkeypatch, xs=(64, 64), ws=(64, 64), dtype="int8", out_dtype="int32",
                            bias=(64,), act="relu")
    used = gemm_step.step_kernels(plan)
    cutlass_tiers = [t for t in plan.tiers if t.arch != "generic"]
    assert [k.source.path for k in used[:len(cutlass_tiers)]] == [t.cfg.path for t in cutlass_tiers]
    for tier, kernel in zip(cutlass_tiers, used):
        guard = gemm_step.GUARDS[tier.arch]
        assert kernel.declaration.startswith(f"#ifndef {guard}\n") and kernel.declaration.endswith("\n#endif")
        assert f"int {tier.cfg.prefix}_run(const GemmArgs& args" in kernel.declaration
    # the generic GEMM, then the 8-bit B transposition's strided copy
    assert [k.source.unit for k in used[len(cutlass_tiers):]] == ["light", "light"]
    assert plan.has_transposed_b
    for kernel in used[len(cutlass_tiers):]:
        name = kernel.declaration.split("(")[0].split()[-1]
        assert name in kernel.source.text


def test_step_code_runs_the_tiers_in_order_then_the_generic_gemm(monkeypatch):
    ((plan, ctx, code),) = plans(monkeypatch, xs=(64, 64), ws=(64, 64), bias=(64,), act="relu")
    assert [t.arch for t in plan.tiers] == ["sm90", "sm80", "generic"]
    positions = [code.index(f"#ifndef {gemm_step.GUARDS['sm90']}"), code.index(f"#ifndef {gemm_step.GUARDS['sm80']}"),
                 code.index("if (!done) {  // byocc generic SIMT GEMM")]
    assert positions == sorted(positions)
    sm90 = plan.tiers[0].cfg
    assert "if (!done && dev.major == 9) {  // cutlass3x_tma_ws_" in code
    assert f"byocc::{sm90.prefix}_workspace_bytes(g) <= cutlass_ws_bytes) {{" in code
    assert "  if (byocc::aligned_to(g.A, 16) &&\n    g.lda % 8 == 0 &&" in code
    assert "    byocc::aligned_to(g.bias, 16) &&\n    g.batch_stride_bias % 8 == 0 &&" in code
    assert not code.endswith("\n") and code.splitlines()[-1] == "}"
    assert gemm_step.step_code(plan, ctx) == code


def test_the_gemm_step_uses_the_skeletons_size(monkeypatch):
    from byocc.backends.cuda.step import Size

    ((plan, ctx, _),) = plans(monkeypatch, xs=(32, 8), ws=(8, 16))
    size = gemm_plan.step_scratch(plan, ctx)
    assert isinstance(size, Size)
    assert [t.arch for t in plan.tiers] == ["sm90", "sm80", "generic"]


def test_kernel_declarations_with_and_without_a_guard():
    cfg = GemmKernelConfig(arch="sm80", dtype_a="float16", dtype_b="float16", dtype_c=None,
                           dtype_d="float16", accumulator="float32", b_layout="nn", align_a=8,
                           align_b=8, align_c=0, align_d=8, tile=(128, 256, 32), stages=3)
    plain = kernel_declarations(cfg)
    assert plain.startswith("namespace byocc {\n") and plain.endswith("}  // namespace byocc\n")
    run = [line for line in plain.splitlines() if "_run(" in line or "cudaStream_t" in line]
    assert run[1].index("cudaStream_t") == run[0].index("_run(")  # the continuation under the name
    assert kernel_declarations(cfg, "BYOCC_NO_SM80") == f"#ifndef BYOCC_NO_SM80\n{plain}#endif"


def test_templates_ship_in_the_package():
    folder = resources.files("byocc.backends.cutlass") / "templates"
    names = {p.name for p in folder.iterdir()}
    assert {"gemm_step.cu.j2", "kernel_declarations.h.j2", "unit.cu.j2", "sm90_unit.cu.j2",
            "sm80_unit.cu.j2"} <= names


def test_gemm_dtypes_come_from_the_one_table():
    for name in GEMM_INPUT_DTYPES:
        assert dtype_bits(name) == DTYPES[name].bits and DTYPES[name].cutlass is not None
    with pytest.raises(ValueError, match="unsupported GEMM input dtype 'float64'"):
        dtype_bits("float64")


@needs_cutlass_library
def test_unit_type_names_come_from_the_one_table():
    from byocc.backends.cutlass.unit_text import cutlass_library
    from byocc.backends.cutlass.unit_text import element_type
    from byocc.backends.cutlass.unit_text import library_type

    lib, _ = cutlass_library()
    for name in (*GEMM_INPUT_DTYPES, "int32"):
        assert element_type(name) == DTYPES[name].cutlass
        assert library_type(lib, name) == getattr(lib.DataType, DTYPES[name].short)
    assert element_type("float32", tf32=True) == "cutlass::tfloat32_t"
    assert library_type(lib, "float32", tf32=True) == lib.DataType.tf32
    assert EpilogueSpec().formula == "D = acc"
