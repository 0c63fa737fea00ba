"""GEMMs at every shape (issue 19 item 2): the split-K rule for decode shapes, the run-time M
buckets of a symbolic M (tile rule, wrapper dispatch, manifest) and the K-padded sm_90a tier
(docs/codegen.md#split-k, #m-buckets, #unaligned-k)."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest
from test_cutlass_codegen import gen
from test_cutlass_codegen import matmul_module
from test_cutlass_codegen import wrapper_of

from byocc.backends.cutlass.tiles import H200_SM_COUNT
from byocc.backends.cutlass.tiles import select_sm90
from byocc.backends.cutlass.tiles import select_sm90_decode
from byocc.backends.cutlass.tiles import select_sm90_split
from byocc.backends.cutlass.tiles import sm90_buckets
from byocc.backends.cutlass.tiles import sm90_dim_buckets

C7 = ((64, 128, 64), (1, 1, 1), "pingpong")
C8 = ((64, 64, 64), (1, 1, 1), "pingpong")


# --------------------------------------------------------------------------- split-K rule
@pytest.mark.parametrize("m,n,k,splits", [
    (16, 4096, 4096, 4),   # 32 tiles of 64x128 -> 4 slices of 1024: 128 CTAs
    (1, 4096, 4096, 4),
    (64, 4096, 4096, 4),
    (16, 2048, 4096, 8),   # 16 tiles -> 8 slices of 512
    (16, 1024, 4096, 16),  # 8 tiles -> 16 slices of 256 (the shortest slice)
    (16, 4096, 11008, 4),  # 11008 = 4 x 2752 (43 k-tiles each)
    (16, 4096, 4160, 1),   # 4160 = 65 k-tiles: no two equal slices of whole k-tiles
    (16, 4096, 512, 1),    # 2 slices of 256 would leave 64 CTAs: the rule still halves
])
def test_split_k_slices(m, n, k, splits):
    got = select_sm90_split(m, n, k, 1, "float16")
    if k == 512:
        assert got == (*C7, 2)
        return
    if splits == 1:
        assert got is None
        return
    assert got == (*C7, splits)
    tiles = -(-n // 128)
    assert tiles * splits <= H200_SM_COUNT and k % (splits * 64) == 0 and k // splits >= 256


@pytest.mark.parametrize("shape", [
    (65, 4096, 4096, 1),     # two 64-row tiles: the wave rule (C5)
    (16, 16384, 4096, 1),    # 128 tiles already fill the machine
    (16, 4096, 4096, 2),     # batched (L > 1)
    (16, 4096, 200, 1),      # K too short to split
])
def test_no_split_k(shape):
    assert select_sm90_split(*shape, "float16") is None


def test_symbolic_m_in_a_bucket_is_taken_as_64():
    assert select_sm90_split(None, 4096, 4096, 1, "float16") == select_sm90_split(64, 4096, 4096, 1, "float16")
    assert select_sm90_split(None, 4096, None, 1, "float16") is None


def test_split_k_only_for_16_bit_inputs():
    assert select_sm90_split(16, 4096, 4096, 1, "bfloat16") == (*C7, 4)
    assert select_sm90_split(16, 4096, 4096, 1, "float32") is None
    assert select_sm90_split(16, 4096, 4096, 1, "int8") is None


@pytest.mark.parametrize("m,expected", [
    (1, ("split", *C7, 4)), (16, ("split", *C7, 4)), (32, ("split", *C7, 4)),
    # a full 64-row tile: one fused C8 kernel (64 CTAs) beat split-K on the H200 (13.3 -> 10.9 us)
    (33, ("tile", *C8, False, 1)), (64, ("tile", *C8, False, 1)),
    (65, None),
])
def test_decode_rule(m, expected):
    assert select_sm90_decode(m, 4096, 4096, 1, "float16") == expected


def test_decode_rule_splits_when_c8_leaves_the_machine_idle():
    # N = 1024: 16 C8 tiles would use 16 SMs; split-K gives 8 x 16 = 128 CTAs
    assert select_sm90_decode(64, 1024, 4096, 1, "float16") == ("split", *C7, 16)


# --------------------------------------------------------------------------- M buckets
def test_buckets_for_4096_square():
    buckets = sm90_buckets(4096, 4096, 1, "float16")
    assert [(lo, hi) for lo, hi, _ in buckets] == [(1, 32), (33, 64), (65, 128), (129, 512), (513, 1024),
                                                   (1025, None)]
    assert buckets[0][2] == ("split", *C7, 4) and buckets[1][2] == ("tile", *C8, False, 1)
    # every probe M runs exactly what a static shape of that M gets
    for m in (1, 16, 64, 128, 256, 1024, 4096, 16384, 65536):
        (choice,) = [c for lo, hi, c in buckets if lo <= m and (hi is None or m <= hi)]
        decode = select_sm90_decode(m, 4096, 4096, 1, "float16")
        assert choice == (decode or ("tile", *select_sm90(m, 4096, 4096, 1, "float16")))


def test_buckets_are_contiguous_and_cover_every_m():
    for n, k in ((4096, 4096), (11008, 4096), (1024, 4096), (64, 64), (3000, 1504)):
        buckets = sm90_buckets(n, k, 1, "float16")
        assert buckets[0][0] == 1 and buckets[-1][1] is None
        for (_, hi, a), (lo, _, b) in zip(buckets, buckets[1:]):
            assert lo == hi + 1 and a != b


def test_no_m_buckets_when_n_or_k_is_symbolic():
    assert sm90_buckets(None, 4096, 1, "float16") == []
    assert sm90_buckets(4096, None, 1, "float16") == []


# --------------------------------------------------------------------------- generated code
def _conditions(text: str) -> list[str]:
    return re.findall(r"if \(!done && (dev\.major == 9[^)]*)\)", text)


def test_symbolic_m_wrapper_dispatches_by_bucket():
    gm, entry = gen(xs=("m", 4096), ws=(4096, 4096), trans=True, bias=(4096,), act="relu")
    text = wrapper_of(gm, entry)
    assert _conditions(text) == ["dev.major == 9 && gm <= 32", "dev.major == 9 && gm >= 33 && gm <= 64",
                                 "dev.major == 9 && gm >= 65 && gm <= 128",
                                 "dev.major == 9 && gm >= 129 && gm <= 512",
                                 "dev.major == 9 && gm >= 513 && gm <= 1024", "dev.major == 9 && gm >= 1025"]
    # the sm_80 tier and the generic GEMM stay unconditional fallbacks after the buckets
    sm80 = text.index("#ifndef BYOCC_NO_SM80\n      if (!done && true)")
    assert text.index("gm >= 1025") < sm80 < text.index("byocc generic SIMT GEMM")
    sm90 = [v for v in entry.variants if v.arch == "sm_90a"]
    assert [dict(v.params)["m_bucket"] for v in sm90] == [[1, 32], [33, 64], [65, 128], [129, 512], [513, 1024],
                                                         [1025, None]]
    assert dict(sm90[0].params)["split_k"] == 4 and dict(sm90[0].params)["epilogue"] == "split-K reduction"
    # the split-K partials are sized for the bucket's largest M: 4 slices x 32 x 4096 fp32
    assert entry.scratch_bytes == 4 * 32 * 4096 * 4
    (step,) = entry.steps
    assert [(b["m_min"], b["m_max"], b["split_k"]) for b in step["m_buckets"]] == [
        (1, 32, 4), (33, 64, 1), (65, 128, 1), (129, 512, 1), (513, 1024, 1), (1025, None, 1)]
    assert [b["kernel"] for b in step["m_buckets"]] == [dict(v.params)["kernel"] for v in sm90]


def test_n_and_k_buckets_follow_the_static_rule():
    """With M static and N (or K) the one symbolic dim, the buckets of that dim: contiguous,
    covering every value, and each bucket's choice is what the static rule picks for a
    power of two inside it."""
    for dim, m, n, k in (("n", 4096, None, 4096), ("n", 16, None, 4096), ("k", 4096, 4096, None),
                         ("k", 2048, 512, None)):
        buckets = sm90_dim_buckets(dim, m, n, k, 1, "float16")
        assert buckets[0][0] == 1 and buckets[-1][1] is None and len(buckets) >= 1
        for (_, hi, _), (lo, _, _) in zip(buckets, buckets[1:]):
            assert lo == hi + 1
        for v in (1, 100, 1024, 3000, 70000):
            (choice,) = [c for lo, hi, c in buckets if lo <= v and (hi is None or v <= hi)]
            p = min(q for q in (2 ** i for i in range(17)) if q >= v) if v <= 65536 else 65536
            probe = {"n": (m, p, k), "k": (m, n, p)}[dim]
            assert choice == ("tile", *select_sm90(*probe, 1, "float16"))
    assert sm90_dim_buckets("n", None, None, 4096, 1, "float16") == []  # M symbolic too: none
    assert sm90_dim_buckets("k", 4096, 4096, 4096, 1, "float16") == []  # nothing symbolic


def test_symbolic_n_wrapper_dispatches_by_the_actual_n():
    gm, entry = gen(xs=(4096, 4096), ws=("n", 4096), trans=True, bias=None, act="relu")
    text = wrapper_of(gm, entry)
    buckets = sm90_dim_buckets("n", 4096, None, 4096, 1, "float16")
    want = []
    for lo, hi, _ in buckets:
        cond = "dev.major == 9" + (f" && gn >= {lo}" if lo > 1 else "") + (f" && gn <= {hi}" if hi is not None else "")
        want.append(cond)
    assert _conditions(text) == want and len(want) > 1
    sm90 = [v for v in entry.variants if v.arch == "sm_90a"]
    assert [dict(v.params)["n_bucket"] for v in sm90] == [[lo, hi] for lo, hi, _ in buckets]
    (step,) = entry.steps
    assert [(b["n_min"], b["n_max"]) for b in step["n_buckets"]] == [(lo, hi) for lo, hi, _ in buckets]
    assert "m_buckets" not in step
    assert "for N in [1, " in text  # the header names the dim the buckets bound


def test_static_decode_shape_is_split_k():
    gm, entry = gen(xs=(16, 4096), ws=(4096, 4096), trans=True, bias=(4096,), act="relu")
    text = wrapper_of(gm, entry)
    assert "g.M = gm; g.N = gn; g.K = gks; g.L = 4;" in text
    assert "g.A = byocc::data_of(args[1]); g.lda = gk; g.batch_stride_a = gks;" in text
    assert "g.D = ws_base + off_split; g.ldd = gn; g.batch_stride_d = gm * gn;" in text
    assert "splitk_f32_f16_run(ws_base + off_split, 4, gm * gn, e, byocc::data_of(args[3])" in text
    assert entry.scratch_bytes == 4 * 16 * 4096 * 4
    # the split unit computes acc only (fp32, no epilogue): the reduction applies bias + relu
    sm90 = next(s for s in gm.sources if s.unit == "sm90")
    assert "D[l] = acc[l]" in sm90.text and "tile 64x128x64, cluster 1x1x1, pingpong" in sm90.text
    assert any(s.path == "src/kernels/generic_splitk_f32_f16.cu" for s in gm.sources)


def test_nn_split_k_slices_b_by_rows():
    gm, entry = gen(xs=(8, 512), ws=(512, 64), bias=(64,))
    text = wrapper_of(gm, entry)
    assert "g.B = byocc::data_of(args[1]); g.ldb = gn; g.batch_stride_b = gks * gn;" in text


def test_unaligned_k_pads_into_scratch():
    gm, entry = gen(xs=(2000, 1500), ws=(3000, 1500), trans=True, bias=(3000,), act="relu")
    v = entry.variants[0]
    assert v.arch == "sm_90a" and dict(v.params)["pad_k"] == 1504
    text = wrapper_of(gm, entry)
    assert "const int64_t gkp = int64_t(1504);" in text
    assert "g.A = ws_base + off_pad_a; g.lda = gkp;" in text and "g.B = ws_base + off_pad_b; g.ldb = gkp;" in text
    assert entry.scratch_bytes == 2000 * 1504 * 2 + 3000 * 1504 * 2
    # the aligned shape shares the unit
    gm2, entry2 = gen(xs=(2000, 1504), ws=(3000, 1504), trans=True, bias=(3000,), act="relu")
    assert dict(entry2.variants[0].params)["kernel"] == dict(v.params)["kernel"]
    assert "pad_k" not in dict(entry2.variants[0].params) and entry2.scratch_bytes == 0


def test_sm80_only_build_keeps_its_tiers(tmp_path):
    from byocc.backends import get_patterns_with_prefix
    from byocc.backends.cutlass.codegen import codegen
    from byocc.text import parse_module
    from byocc.transform import partition

    mod = parse_module(matmul_module(xs=("m", 4096), ws=(4096, 4096), trans=True, bias=(4096,), act="relu"))
    out = partition(mod, get_patterns_with_prefix("cutlass"), path="annotate", run_codegen=True,
                    codegens={"cutlass": lambda f, o, c: codegen(f, {"arch": ["sm_80"]}, c)})
    (gm,) = out.attrs["external_mods"]
    (entry,) = gm.entries
    assert [v.arch for v in entry.variants] == ["sm_80", "sm_80"]
    assert entry.scratch_bytes == 0 and not any("splitk" in s.path for s in gm.sources)


def test_manifest_lists_the_buckets(tmp_path):
    model = tmp_path / "m.relax"
    model.write_text(matmul_module(xs=("m", 4096), ws=(4096, 4096), trans=True, bias=(4096,), act="relu"))
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, "-m", "byocc", "partition", str(model), "--backend", "cutlass",
                           "-o", str(out)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    text = json.dumps(manifest)
    assert '"m_buckets"' in text
    steps = [s for f in manifest["functions"] for s in f.get("steps", []) if "m_buckets" in s]
    assert len(steps) == 1
    assert [b["m_max"] for b in steps[0]["m_buckets"]] == [32, 64, 128, 512, 1024, None]
    for b in steps[0]["m_buckets"]:
        assert (out / b["kernel"]).exists()
