"""CUTLASS GEMM kernel units (byocc.backends.cutlass.kernels, tiles): configuration hashing,
support predicates, the H200 selection rule (spec/backends.md 7.7), the emitted text, and
one real sm_90a compile when nvcc and the CUTLASS headers are present."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from byocc.backends.codegen import CodegenError
from byocc.backends.cutlass.kernels import EpilogueSpec
from byocc.backends.cutlass.kernels import GemmKernelConfig
from byocc.backends.cutlass.kernels import emit_kernel
from byocc.backends.cutlass.kernels import kernel_declarations
from byocc.backends.cutlass.kernels import sm80_config
from byocc.backends.cutlass.kernels import sm80_supports
from byocc.backends.cutlass.kernels import sm90_config
from byocc.backends.cutlass.kernels import sm90_supports
from byocc.backends.cutlass.tiles import select_sm90
from byocc.backends.cutlass.tiles import sm80_tile
from byocc.backends.toolchain import NVCC_ARCH_FLAGS
from byocc.backends.toolchain import NVCC_COMMON_FLAGS
from byocc.backends.toolchain import cutlass_include_dirs
from byocc.backends.toolchain import cutlass_version

BIAS_RELU = EpilogueSpec(bias="per_column", act="relu")


def sm90(**kw) -> GemmKernelConfig:
    base = dict(arch="sm90", dtype_a="float16", dtype_b="float16", dtype_c=None,
                dtype_d="float16", accumulator="float32", b_layout="tn", align_a=8, align_b=8,
                align_c=0, align_d=8, tile=(128, 256, 64), cluster=(2, 1, 1),
                schedule="cooperative", epilogue=BIAS_RELU)
    base.update(kw)
    return GemmKernelConfig(**base)


def sm80(**kw) -> GemmKernelConfig:
    base = dict(arch="sm80", dtype_a="float16", dtype_b="float16", dtype_c=None,
                dtype_d="float16", accumulator="float32", b_layout="nn", align_a=8, align_b=8,
                align_c=0, align_d=8, tile=(128, 256, 32), stages=3,
                epilogue=EpilogueSpec(bias="per_column", act="gelu"))
    base.update(kw)
    return GemmKernelConfig(**base)


RESIDUAL_MUL_RELU = EpilogueSpec(bias="per_column", source="full", act="gelu",
                                 residual_op="multiply", residual="full", post="relu")

needs_cutlass_library = pytest.mark.skipif(
    importlib.util.find_spec("cutlass_library") is None,
    reason="cutlass_library (nvidia-cutlass wheel, the byocc[cuda] extra) is not installed")


# -- configuration -------------------------------------------------------------------------------


def test_hash_is_deterministic_and_names_the_path():
    a, b = sm90(), sm90()
    assert a.hash == b.hash
    assert len(a.hash) == 12 and int(a.hash, 16) >= 0
    assert a.path == f"src/kernels/k_{a.hash}.cu"
    assert a.prefix == f"gemm_{a.hash}"
    assert a.canonical_text.splitlines()[:3] == ["arch=sm90", "dtype_a=float16", "dtype_b=float16"]
    assert "epilogue.act=relu" in a.canonical_text.splitlines()


def test_every_field_changes_the_hash():
    base = sm90()
    variants = [
        sm90(b_layout="nn"), sm90(dtype_d="float32", align_d=4), sm90(tile=(128, 128, 64)),
        sm90(cluster=(1, 2, 1)), sm90(stream_k=True), sm90(epilogue=EpilogueSpec(bias="per_column")),
        sm90(epilogue=EpilogueSpec(bias="per_column", act="gelu")), sm90(align_a=4),
        sm90(epilogue=EpilogueSpec(bias="per_column", act="relu", residual_op="add",
                                   residual="per_column"), dtype_c="float16", align_c=8),
    ]
    hashes = {base.hash} | {v.hash for v in variants}
    assert len(hashes) == len(variants) + 1


def test_epilogue_spec_validation():
    with pytest.raises(ValueError, match="residual and residual_op come together"):
        EpilogueSpec(bias="per_column", residual="full", source="full")
    with pytest.raises(ValueError, match=r"a full residual is the C operand"):
        EpilogueSpec(bias="per_column", residual="full", residual_op="add")
    with pytest.raises(ValueError, match="post needs a residual"):
        EpilogueSpec(bias="per_column", post="relu")
    with pytest.raises(ValueError, match="act 'tanh'"):
        EpilogueSpec(act="tanh")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="dtype_c is set exactly when the epilogue reads C"):
        sm90(dtype_c="float16")


def test_formula():
    assert BIAS_RELU.formula == "D = relu(acc + bias)"
    assert RESIDUAL_MUL_RELU.formula == "D = relu(gelu(acc + bias) * C)"
    assert EpilogueSpec(source="full").formula == "D = acc + C"
    assert EpilogueSpec(bias="per_column", residual_op="add",
                        residual="per_column").formula == "D = acc + bias + residual"


# -- support predicates --------------------------------------------------------------------------


def test_sm90_supports():
    assert sm90_supports(sm90())
    assert sm90_supports(sm90(epilogue=RESIDUAL_MUL_RELU, dtype_c="float16", align_c=8))
    assert sm90_supports(sm90(dtype_a="float32", dtype_b="float32", dtype_d="float32",
                              align_a=4, align_b=4, align_d=4, tile=(128, 256, 32)))
    assert sm90_supports(sm90(dtype_a="int8", dtype_b="int8", dtype_d="int32",
                              accumulator="int32", align_a=16, align_b=16, align_d=4,
                              tile=(128, 128, 128), cluster=(1, 2, 1)))
    assert not sm90_supports(sm90(dtype_a="float32", dtype_b="float32", dtype_d="float32",
                                  align_a=4, align_b=4, align_d=4, tile=(128, 256, 32),
                                  b_layout="nn"))  # TF32 "nn": non-finite on the H200
    assert not sm90_supports(sm90(align_a=4))  # TMA tier only
    assert not sm90_supports(sm90(tile=(128, 256, 32)))  # k-tile 64 for 16-bit
    assert not sm90_supports(sm90(tile=(64, 128, 64), cluster=(2, 1, 1)))  # C3 is ping-pong
    assert sm90_supports(sm90(tile=(64, 128, 64), cluster=(2, 1, 1), schedule="pingpong"))
    assert sm90_supports(sm90(tile=(64, 128, 64), cluster=(1, 1, 1), schedule="pingpong"))  # C7 (split-K)
    assert not sm90_supports(sm90(tile=(64, 128, 64), cluster=(1, 2, 1), schedule="pingpong"))
    assert not sm90_supports(sm90(tile=(64, 128, 64), cluster=(2, 1, 1), schedule="pingpong",
                                  stream_k=True))
    assert sm90_supports(sm90(swizzle=8))
    assert not sm90_supports(sm90(swizzle=3))
    assert not sm90_supports(sm90(dtype_a="int8", dtype_b="int8", dtype_d="int32",
                                  accumulator="int32", align_a=16, align_b=16, align_d=4,
                                  tile=(128, 128, 128), cluster=(1, 2, 1), b_layout="nn"))
    assert not sm90_supports(sm80())


def test_sm80_supports():
    assert sm80_supports(sm80())
    assert sm80_supports(sm80(align_a=2, align_b=2, align_d=2, tile=(64, 128, 32), stages=6))
    assert sm80_supports(sm80(align_a=1, align_b=1, align_d=1, stages=2))
    assert not sm80_supports(sm80(align_a=1, align_b=1, align_d=1, stages=3))
    assert sm80_supports(sm80(epilogue=EpilogueSpec(bias="per_column", source="full",
                                                    residual_op="add", residual="full",
                                                    post="relu"),
                              dtype_c="float16", align_c=8))
    # two addends besides acc without a residual: the generic epilogue's job
    assert not sm80_supports(sm80(epilogue=EpilogueSpec(bias="per_column", source="full"),
                                  dtype_c="float16", align_c=8))
    assert not sm80_supports(sm80(tile=(128, 256, 64)))
    assert not sm80_supports(sm80(swizzle=8))  # a 3.x tile-scheduler setting
    assert not sm80_supports(sm80(dtype_a="bfloat16", dtype_b="bfloat16", align_a=1,
                                  align_b=1, stages=2))


# -- selection (spec 7.7) ------------------------------------------------------------------------


@pytest.mark.parametrize("shape, expected", [
    ((4096, 4096, 4096, 1), ((128, 256, 64), (2, 1, 1), "cooperative", False, 1)),  # 512 tiles, eff .97
    # 64 x 32 C1 tiles: both grid sides >= 32 -> swizzle 8 (measured +4 % at the power cap)
    ((8192, 8192, 8192, 1), ((128, 256, 64), (2, 1, 1), "cooperative", False, 8)),
    ((16384, 1024, 3072, 1), ((128, 256, 64), (2, 1, 1), "cooperative", False, 1)),  # 128 x 4 grid
    # K <= 1024: C6 (128x128 ping-pong) when it fills waves
    ((16384, 3072, 1024, 1), ((128, 128, 64), (2, 1, 1), "pingpong", False, 1)),
    ((8, 512, 1024, 8), ((64, 64, 64), (2, 1, 1), "pingpong", False, 1)),  # 32 C3 tiles -> C5
    # N <= 64, K <= 256 (a 1x1 conv as a GEMM): C9 (128x64 ping-pong) when it fills waves
    ((100352, 64, 64, 1), ((128, 64, 64), (1, 1, 1), "pingpong", False, 1)),
    ((100352, 64, 256, 1), ((128, 64, 64), (1, 1, 1), "pingpong", False, 1)),
    ((100352, 64, 512, 1), ((128, 128, 64), (2, 1, 1), "pingpong", False, 1)),  # K > 256: C6
    ((100352, 256, 64, 1), ((128, 128, 64), (2, 1, 1), "pingpong", False, 1)),  # N > 64: C6
    ((3136, 64, 64, 1), ((64, 64, 64), (2, 1, 1), "pingpong", False, 1)),  # 25 C9 tiles -> C5
    # wave-starved: C3 with >= 99 tiles, else C5 (both with a 2x1 cluster)
    ((1000, 1024, 520, 1), ((64, 128, 64), (2, 1, 1), "pingpong", False, 1)),  # 128 C3 tiles
    ((128, 4096, 4096, 1), ((64, 64, 64), (2, 1, 1), "pingpong", False, 1)),  # 64 C3 tiles
    ((1, 4096, 4096, 1), ((64, 64, 64), (2, 1, 1), "pingpong", False, 1)),
    # fewer than 16 C3 tiles and K >= 4096: C2 with the stream-K scheduler
    ((64, 1024, 4096, 1), ((128, 128, 64), (1, 2, 1), "cooperative", True, 1)),  # 8 C3 tiles
    ((64, 512, 8192, 1), ((128, 128, 64), (1, 2, 1), "cooperative", True, 1)),
    ((64, 1024, 2048, 1), ((64, 64, 64), (2, 1, 1), "pingpong", False, 1)),  # K < 4096: C5
    ((None, 4096, 4096, 1), ((128, 128, 64), (1, 2, 1), "cooperative", False, 1)),
])
def test_select_sm90(shape, expected):
    assert select_sm90(*shape, "float16") == expected


def test_select_sm90_wave_efficiency_falls_back_to_c2():
    # C1: 17 x 16 = 272 tiles -> 3 waves of 132 -> efficiency 0.69 < 0.75; C2: 17 x 32 = 544
    # tiles -> 5 waves -> 0.82
    assert select_sm90(2112, 4096, 4096, 1, "float16")[0] == (128, 128, 64)


def test_select_sm90_scales_k_per_dtype():
    assert select_sm90(4096, 4096, 4096, 1, "float32")[0] == (128, 256, 32)
    assert select_sm90(4096, 4096, 4096, 1, "int8")[0] == (128, 256, 128)


def test_sm80_tile():
    assert sm80_tile(4096, 4096, 4096, 1, "float16") == ((128, 256, 32), 3)
    assert sm80_tile(1280, 1280, 512, 1, "float16") == ((128, 128, 32), 4)  # 50 large, 100 medium
    assert sm80_tile(1024, 1536, 512, 1, "float16") == ((64, 128, 32), 6)  # 96 medium CTAs
    assert sm80_tile(512, 1024, 512, 1, "float16") == ((64, 128, 32), 6)
    assert sm80_tile(32, 6, 16, 1, "float16") == ((64, 64, 32), 10)
    assert sm80_tile(None, 16, 8, 1, "float16") == ((128, 128, 32), 4)
    assert sm80_tile(4096, 4096, 4096, 1, "float32") == ((128, 256, 16), 3)


def test_config_helpers():
    hot = sm90_config(8192, 8192, 8192, 1, dtype="float16", dtype_d="float16", b_layout="tn",
                      epilogue=BIAS_RELU)
    assert hot == sm90(swizzle=8)  # C1, 16-byte alignments, swizzle 8 (64 x 32 grid)
    small = sm90_config(128, 4096, 4096, 1, dtype="int8", dtype_d="int32", b_layout="tn",
                        epilogue=EpilogueSpec())
    assert (small.tile, small.schedule, small.align_a, small.align_d) == ((64, 64, 128), "pingpong", 16, 4)
    assert sm90_supports(small)
    # TVM's (32,6)x(6,16) case: K = 6 -> A alignment 2, N = 16 -> B and D alignment 8
    odd = sm80_config(32, 16, 6, 1, dtype="float16", dtype_d="float16", b_layout="nn",
                      epilogue=EpilogueSpec(source="full"))
    assert (odd.align_a, odd.align_b, odd.align_c, odd.align_d, odd.dtype_c) == (2, 8, 8, 8, "float16")
    assert sm80_supports(odd)
    k15 = sm80_config(16, 2, 15, 1, dtype="float16", dtype_d="float16", b_layout="tn",
                      epilogue=EpilogueSpec(bias="per_column", act="gelu"))
    assert (k15.align_a, k15.align_b, k15.align_d, k15.stages) == (1, 1, 2, 2)
    assert sm80_supports(k15)


# -- emitted text --------------------------------------------------------------------------------


@needs_cutlass_library
def test_sm90_unit_text():
    cfg = sm90()
    unit = emit_kernel(cfg)
    assert unit.path == cfg.path and unit.unit == "sm90"
    lines = unit.text.splitlines()
    assert lines[0] == f"// k_{cfg.hash}.cu: one CUTLASS GEMM kernel, generated by byocc."
    assert "// engine CUTLASS 3.x, sm_90a TMA warp-specialized" in lines
    assert "//   D[l] = relu(acc[l] + bias)" in lines
    assert "// B      float16, stored N x K (K contiguous) (\"tn\"), alignment 8" in lines
    assert "// shape  tile 128x256x64, cluster 2x1x1, cooperative, persistent tile scheduler" in lines
    text = unit.text
    assert "cutlass::epilogue::fusion::LinCombPerColBiasEltAct<\n    cutlass::epilogue::thread::ReLu, ElementD" in text
    assert "cutlass::epilogue::TmaWarpSpecializedCooperative" in text
    assert "cutlass::gemm::KernelTmaWarpSpecializedCooperative" in text
    assert "StageCountAutoCarveout" in text
    assert "GELU_taylor" not in text
    for fn in ("can_implement(const GemmArgs& args)", "workspace_bytes(const GemmArgs& args)",
               "run(const GemmArgs& args, void* workspace, uint64_t workspace_bytes,"):
        assert f"{cfg.prefix}_{fn}" in text
    assert '#include "byocc_internal.h"' in text and '#include "byocc_gemm.h"' in text
    assert emit_kernel(sm90()).text == text  # byte-deterministic
    assert "max_swizzle_size" not in text  # CUTLASS's default swizzle
    swizzled = emit_kernel(sm90(swizzle=8)).text
    assert "  arguments.scheduler.max_swizzle_size = 8;" in swizzled
    assert "cooperative, persistent tile scheduler, swizzle 8\n" in swizzled
    assert sm90(swizzle=8).hash != cfg.hash
    assert text.endswith("}  // namespace byocc\n") and "\n\n\n" not in text


@needs_cutlass_library
def test_sm90_fusion_choice():
    stream_k = emit_kernel(sm90(tile=(128, 128, 64), cluster=(1, 2, 1), stream_k=True)).text
    assert "cutlass::gemm::StreamKScheduler" in stream_k and "stream-K tile scheduler" in stream_k
    plain = emit_kernel(sm90(epilogue=EpilogueSpec())).text
    assert "fusion::LinearCombination<ElementD, float, ElementC, float>" in plain
    assert "using ElementC = void;" in plain
    res_add = emit_kernel(sm90(epilogue=EpilogueSpec(bias="per_column", source="full",
                                                     act="gelu", residual_op="add",
                                                     residual="full"),
                               dtype_c="float16", align_c=8)).text
    assert "PerColResAddPerColBiasEltAct<\n    cutlass::epilogue::thread::GELU" in res_add
    evt = emit_kernel(sm90(epilogue=RESIDUAL_MUL_RELU, dtype_c="float16", align_c=8)).text
    assert "// Custom epilogue visitor tree: D = relu(gelu(acc + bias) * C)" in evt
    assert "evt::Sm90Compute<cutlass::multiplies, float, float, kRound>" in evt
    assert "evt::Sm90Compute<cutlass::epilogue::thread::ReLu, ElementD, float, kRound>" in evt
    tf32 = emit_kernel(sm90(dtype_a="float32", dtype_b="float32", dtype_d="float32", align_a=4,
                            align_b=4, align_d=4, tile=(128, 256, 32))).text
    assert "using ElementA = cutlass::tfloat32_t;" in tf32


@needs_cutlass_library
def test_sm80_unit_text():
    cfg = sm80()
    unit = emit_kernel(cfg)
    assert unit.unit == "sm80"
    text = unit.text
    assert "cutlass::epilogue::thread::LinearCombinationGELU<\n    ElementD, kEpilogueVector, float, float, cutlass::epilogue::thread::ScaleType::Default>" in text
    assert "cutlass::gemm::device::GemmUniversal<" in text
    assert "cutlass::gemm::GemmShape<16, 8, 16>" in text
    assert "cutlass::gemm::threadblock::GemmIdentityThreadblockSwizzle<8>" in text
    assert "args.bias, args.D" in text and "0, args.ldd);  // ldc = 0: one row for all M" in text
    align1 = emit_kernel(sm80(align_a=1, align_b=1, align_d=1, stages=2,
                              epilogue=EpilogueSpec())).text
    assert "cutlass::arch::Sm75" in align1 and "GemmShape<16, 8, 8>" in align1
    residual = emit_kernel(sm80(epilogue=EpilogueSpec(bias="per_column", residual_op="multiply",
                                                      residual="per_column", post="relu"),
                                dtype_c="float16", align_c=8)).text
    assert "GemmUniversalWithBroadcast" in residual
    assert "cutlass::multiplies, cutlass::epilogue::thread::ReLu>;" in residual


def test_unsupported_config_is_a_codegen_error():
    with pytest.raises(CodegenError, match="no sm_90a CUTLASS kernel"):
        emit_kernel(sm90(align_a=2))
    with pytest.raises(CodegenError, match="no sm_80 CUTLASS kernel"):
        emit_kernel(sm80(stages=None))


def test_declarations_and_flags():
    cfg = sm90()
    decl = kernel_declarations(cfg)
    assert f"bool {cfg.prefix}_can_implement(const GemmArgs& args);" in decl
    assert NVCC_ARCH_FLAGS["sm90"] == ("-gencode=arch=compute_90a,code=sm_90a",)
    assert "-Xcompiler=-fvisibility=hidden" in NVCC_COMMON_FLAGS
    assert "--use_fast_math" not in NVCC_COMMON_FLAGS


@needs_cutlass_library
def test_cutlass_headers_found():
    include, util = cutlass_include_dirs()
    assert (include / "cutlass" / "gemm" / "device" / "gemm_universal_adapter.h").is_file()
    assert util.name == "include" and util.parent.name == "util"
    assert cutlass_version().count(".") == 2
    with pytest.raises(CodegenError, match="no CUTLASS headers"):
        cutlass_include_dirs("/nonexistent")


# -- one real compile ----------------------------------------------------------------------------


@needs_cutlass_library
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not found: the sm_90a compile test needs the CUDA toolkit")
def test_sm90_unit_compiles(tmp_path: Path):
    """Compiles the hot-path unit (f16 TN bias+relu, C1) with the spec 13 flags (~70 s)."""
    from byocc.backends.cuda import common_sources

    for source in common_sources():
        target = tmp_path / source.path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(source.text)
    cfg = sm90()
    unit = emit_kernel(cfg)
    (tmp_path / unit.path).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / unit.path).write_text(unit.text)
    cmd = ["nvcc", *NVCC_COMMON_FLAGS, *NVCC_ARCH_FLAGS["sm90"],
           *(f"-I{d}" for d in cutlass_include_dirs()), f"-I{tmp_path / 'src'}",
           "-c", str(tmp_path / unit.path), "-o", str(tmp_path / "k.o")]
    lock = "/tmp/byocc_nvcc_heavy.lock"
    if shutil.which("flock") and os.access("/tmp", os.W_OK):
        cmd = ["flock", lock, *cmd]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]
    assert (tmp_path / "k.o").stat().st_size > 0
    symbols = subprocess.run(["nm", "-C", str(tmp_path / "k.o")], capture_output=True, text=True)
    if symbols.returncode == 0:
        assert f"byocc::{cfg.prefix}_run(byocc::GemmArgs const&" in symbols.stdout
