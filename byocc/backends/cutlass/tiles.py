"""Tile menus and the deterministic kernel choice for CUTLASS GEMMs (docs/codegen.md#kernel-choice).

* :func:`select_sm90`: byocc's H200 rule over the sm_90a candidates C1..C6;
* :func:`sm80_tile`: the 2.x tile/stage menu (large, medium, fewer CTAs, tiny).

Both are pure functions of the problem (M, N, K, L; ``None`` for a symbolic dim) and the input
dtype, so the number of distinct compiled units stays small (docs/codegen.md#build-units).
"""

from __future__ import annotations

from math import ceil
from typing import Literal

from ..dtypes import DTYPES
from ..dtypes import GEMM_INPUT_DTYPES

#: SMs of the H200 the rule is tuned for (docs/codegen.md#kernel-choice).
H200_SM_COUNT = 132

Schedule = Literal["cooperative", "pingpong"]
Tile = tuple[int, int, int]

#: docs/codegen.md#kernel-choice candidates for 16-bit inputs: name -> (tile, cluster, schedule). C1..C4 are the first rule's; C3 runs with a 2x1 cluster and C5, C6 are byocc's additions, all measured on the
#: H200 (select_sm90 says where each wins and by how much).
SM90_CANDIDATES: dict[str, tuple[Tile, Tile, Schedule]] = {
    "C1": ((128, 256, 64), (2, 1, 1), "cooperative"),
    "C2": ((128, 128, 64), (1, 2, 1), "cooperative"),
    "C3": ((64, 128, 64), (2, 1, 1), "pingpong"),
    "C4": ((64, 256, 64), (1, 1, 1), "pingpong"),
    "C5": ((64, 64, 64), (2, 1, 1), "pingpong"),
    "C6": ((128, 128, 64), (2, 1, 1), "pingpong"),
    "C7": ((64, 128, 64), (1, 1, 1), "pingpong"),
    "C8": ((64, 64, 64), (1, 1, 1), "pingpong"),
    "C9": ((128, 64, 64), (1, 1, 1), "pingpong"),
}

#: Largest N and K the narrow-N rule of :func:`select_sm90` takes C9 for (the measured range).
NARROW_N_MAX = 64
NARROW_K_MAX = 256

#: The split-K candidate for decode shapes (M <= 64, :func:`select_sm90_split`).
SPLIT_K_CANDIDATE = "C7"
#: Largest M the split-K rule takes (one 64-row tile).
SPLIT_K_MAX_M = 64
#: Above this M (up to 64) a full-width C8 grid beats split-K (:func:`select_sm90_decode`).
DECODE_FUSED_MIN_M = 33
#: Fewest K elements one split keeps (shorter slices spend more on the partials than they save).
SPLIT_K_MIN_SLICE = 256
#: Probe points of :func:`sm90_buckets` (powers of two up to 2^16).
BUCKET_PROBES = tuple(2 ** i for i in range(17))

#: Tile-scheduler swizzle sizes an sm_90a unit may set (CUTLASS's max_swizzle_size).
SM90_SWIZZLES = (1, 2, 4, 8)

#: 2.x menu for 16-bit inputs (warp tile 64x64x32): name -> (tile, stages).
SM80_MENU: dict[str, tuple[Tile, int]] = {
    "large": ((128, 256, 32), 3),
    "medium": ((128, 128, 32), 4),
    "fewer_ctas": ((64, 128, 32), 6),
    "tiny": ((64, 64, 32), 10),
}

def dtype_bits(dtype: str) -> int:
    """Bits of one element of a GEMM input dtype."""
    if dtype not in GEMM_INPUT_DTYPES:
        raise ValueError(f"unsupported GEMM input dtype {dtype!r}")
    return DTYPES[dtype].bits


def scale_k(tile: Tile, dtype: str) -> Tile:
    """The menu's k extent is for 16-bit inputs; keep the k-tile at 128 bytes per row so the
    shared-memory stages fit: 32 for f32 (TF32), 128 for int8/uint8 on sm_90a, and the 2.x
    k extent (32 for 16-bit) scaled the same way."""
    m, n, k = tile
    return (m, n, k * 16 // dtype_bits(dtype))


def _tiles(m: int, n: int, l: int, tile: Tile) -> int:
    return ceil(m / tile[0]) * ceil(n / tile[1]) * l


def _wave_efficiency(tiles: int, sm_count: int) -> float:
    return tiles / (ceil(tiles / sm_count) * sm_count)


def _grid(m: int, n: int, tile: Tile) -> tuple[int, int]:
    return ceil(m / tile[0]), ceil(n / tile[1])


def _fills_waves(m: int, n: int, l: int, tile: Tile) -> bool:
    tiles = _tiles(m, n, l, tile)
    return tiles >= H200_SM_COUNT and _wave_efficiency(tiles, H200_SM_COUNT) >= 0.75


def select_sm90(m: int | None, n: int | None, k: int | None, l: int | None,
                dtype: str) -> tuple[Tile, Tile, Schedule, bool, int]:
    """``(tile, cluster, schedule, stream_k, swizzle)`` for an sm_90a GEMM: the H200 rule of docs/codegen.md#kernel-choice with the branches re-chosen from measurements.

    Steps: (1) a symbolic dim takes C2 without stream-K; (1a) N <= 64 and K <= 256 (the 1x1
    convs of a CNN as GEMMs): C9 (128x64 ping-pong, no cluster) when it fills waves; (2) K <= 1024: C6 (128x128 ping-pong,
    2x1 cluster) when it fills waves (>= 132 tiles, wave efficiency >= 0.75); (3) the first of
    C1, C2 that fills waves; (4) when even C3 (64x128 ping-pong) has fewer than 16 tiles and
    K >= 4096, C2 with the stream-K scheduler; (5) C3 when it has at least 0.75 x 132 tiles,
    (6) else C5 (64x64 ping-pong). The swizzle is 8 when the chosen grid has at least 32
    tiles along both M and N, else 1 (CUTLASS's default).

    Why (f16 TN bias+ReLU on the H200, TFLOP/s, bench/gpu/tile_probe.py: "burst" after idle /
    "sustained" over the last second of 1-3 s; bench/gpu/NOTES.md has the full table):

    * (1a) the memory-bound GEMMs of ResNet-50's 1x1 convs at batch 32 (tile_probe.py --set
      pointwise, sustained TFLOP/s): 100352x64x64 C9 101 against C6's 69 (C5 85, 256x64
      cooperative 104, 128x64 with a 2x1 cluster 100); 100352x64x256 C9 177 against 148. A
      128-column tile computes half its columns for nothing at N = 64. For N >= 256 C6 stays
      within 5 % of the best tile measured (100352x256x64: 156 against 256x128's 162).
    * (2) 16384x3072x1024: C6 716 / 613 against C1's 682 / 578: with 16 k-tiles per output
      tile the epilogue is a large share of a tile's time, and ping-pong overlaps one warp
      group's epilogue with the other's mainloop. At K = 3072 (16384x1024x3072) C1 wins
      (734 vs 713), and at 4096^3 (745 vs 700).
    * (3) C1 beat 256x128 and the other clusters at 4096^3, 8192^3 and 16384x1024x3072
      (within 1-2 %, except 1x1 and 1x2 clusters at 8192^3: -5 %, -3 %).
    * (4) is the stream-K branch of docs/codegen.md#kernel-choice, kept for problems too small for any wave
      (unmeasured); CUTLASS's ping-pong kernel rejects the stream-K scheduler.
    * (5), (6) the wave-starved shapes. 2x1 clusters multicast each B tile to the two CTAs
      above each other, halving the weight's L2 reads, which dominate when M is small:
      1000x1024x520 (128 C3 tiles): C3 2x1 168, 1x1 147, 1x2 167, C5 150 (relu(addmm) 157);
      128x4096x4096 (64 C3 tiles): C5 434 (128 tiles, one wave), C3 2x1 319, 1x1 330, 1x2
      245, 128x64 split-K 2 300 (relu(addmm) 290). cuBLAS itself picks 64x64 with a 2x1
      cluster there.
    * swizzle: at 8192^3 the card runs at its 700 W cap (SM clock 1330-1415 MHz under load,
      'sw_power_cap'); swizzle 8 makes each wave of CTAs a compact block of the grid, so
      fewer operand panels come from DRAM: 771 / 647 against 745 / 616, at a 90 MHz higher
      clock. With a short grid side it loses (16384x3072x1024, 12 N tiles: 509 vs 682),
      hence both sides >= 32.

    The k-tile follows :func:`scale_k`. Cost O(1).
    """
    dtype_bits(dtype)
    if m is None or n is None or k is None or l is None:
        tile, cluster, schedule = SM90_CANDIDATES["C2"]
        return scale_k(tile, dtype), cluster, schedule, False, 1
    names = (("C9",) if n <= NARROW_N_MAX and k <= NARROW_K_MAX else ()) \
        + (("C6",) if k <= 1024 else ()) + ("C1", "C2")
    chosen = next((name for name in names if _fills_waves(m, n, l, SM90_CANDIDATES[name][0])), None)
    stream_k = False
    if chosen is None:
        c3_tiles = _tiles(m, n, l, SM90_CANDIDATES["C3"][0])
        if c3_tiles < 16 and k >= 4096:
            chosen, stream_k = "C2", True
        elif c3_tiles >= 0.75 * H200_SM_COUNT:
            chosen = "C3"
        else:
            chosen = "C5"
    tile, cluster, schedule = SM90_CANDIDATES[chosen]
    grid_m, grid_n = _grid(m, n, tile)
    swizzle = 8 if min(grid_m, grid_n) >= 32 and not stream_k else 1
    return scale_k(tile, dtype), cluster, schedule, stream_k, swizzle


def select_sm90_split(m: int | None, n: int | None, k: int | None, l: int | None,
                      dtype: str) -> tuple[Tile, Tile, Schedule, int] | None:
    """``(tile, cluster, schedule, splits)`` of a split-K sm_90a GEMM for a decode shape, or
    None when the shape has enough output tiles without it (docs/codegen.md#split-k).

    Taken when M <= 64, L == 1, 16-bit inputs, and C7 (64x128 ping-pong, 1x1 cluster) has at
    most 66 output tiles (half of the 132 SMs): the K extent is cut into ``splits`` slices
    (the largest power of two with ``tiles * splits <= 132``, each slice a multiple of 64
    elements and at least :data:`SPLIT_K_MIN_SLICE`), computed as a batch of ``splits`` GEMMs
    into fp32 partials in scratch, then summed with the fused epilogue. ``m`` None (a
    symbolic M bounded by 64 in a bucket of :func:`sm90_buckets`) is taken as 64.

    Why: 16x4096x4096 has 32 C7 tiles, so 32 of 132 SMs stream the 32 MB weight; the batch
    of 4 slices gives 128 CTAs (bench/gpu/NOTES.md, small-M section). Cost O(log K).
    """
    if n is None or k is None or l != 1 or dtype_bits(dtype) != 16:
        return None
    if m is not None and m > SPLIT_K_MAX_M:
        return None
    tile, cluster, schedule = SM90_CANDIDATES[SPLIT_K_CANDIDATE]
    tiles = _tiles(SPLIT_K_MAX_M if m is None else m, n, 1, tile)
    if tiles * 2 > H200_SM_COUNT:
        return None
    splits = 1
    while (tiles * splits * 2 <= H200_SM_COUNT and k % (splits * 2 * tile[2]) == 0
           and k // (splits * 2) >= SPLIT_K_MIN_SLICE):
        splits *= 2
    if splits < 2:
        return None
    return scale_k(tile, dtype), cluster, schedule, splits


def select_sm90_decode(m: int | None, n: int | None, k: int | None, l: int | None,
                       dtype: str) -> tuple | None:
    """The decode-shape choice (M <= 64, few output tiles), before :func:`select_sm90`:
    ``("tile", tile, cluster, schedule, stream_k, swizzle)`` for C8 (64x64 ping-pong, 1x1,
    epilogue fused, no split) when 33 <= M <= 64 and C8 has at least 64 tiles;
    ``("split", tile, cluster, schedule, splits)`` from :func:`select_sm90_split` otherwise;
    None when neither applies (docs/codegen.md#split-k).

    Why (bench/gpu/splitk_probe.py, H200, f16 x 4096 x 4096 bias+ReLU "tn", graph replay, us
    per call; relu(addmm) 11.5 / 10.9 / 11.9 at M = 1 / 16 / 64):

    * M = 1: C7 split 4 14.4 (8: 14.3, 2: 18.1), 64x64 fused 1x1 20.8, 64x32 fused 21.5;
    * M = 16: C7 split 4 15.1 (GEMM 10.8 + reduction 4.0; 8: 15.8, 2: 17.4), 64x64 fused 18.4;
    * M = 64: 64x64 fused 1x1 10.9 and 64x32 fused 10.8 (1.09-1.10x addmm), C7 split 4 13.3.

    Every variant loses 2-4 us when M < 64 (the 64-row tile partly outside A and D), which
    split-K hides with 4x the CTAs; at M = 64 the single fused kernel wins. The crossover
    (33) is between the measured 16 and 64. Cost O(log K).
    """
    split = select_sm90_split(m, n, k, l, dtype)
    if split is None:
        return None
    tile, cluster, schedule = SM90_CANDIDATES["C8"]
    if m is not None and m >= DECODE_FUSED_MIN_M and _tiles(m, n or 0, 1, tile) >= 64:
        return ("tile", scale_k(tile, dtype), cluster, schedule, False, 1)
    return ("split", *split)


def sm90_buckets(n: int | None, k: int | None, l: int | None,
                 dtype: str) -> list[tuple[int, int | None, tuple]]:
    """Run-time M buckets of an sm_90a GEMM whose M is symbolic and N, K, L static
    (docs/codegen.md#m-buckets): ``[(lo, hi, choice), ...]`` in increasing M, ``hi`` None for
    the last (unbounded) one; ``choice`` is ``("split", tile, cluster, schedule, splits)`` or
    ``("tile", tile, cluster, schedule, stream_k, swizzle)``.

    The static rule (:func:`select_sm90_decode`, then :func:`select_sm90`) is evaluated at
    M = 1, 2, 4, ..., 65536; consecutive probes with the same choice form one bucket, whose
    bounds are the probes' midpoints ``(p, 2p]``. So a power-of-two M runs exactly the kernel a
    static shape of that M gets. Empty when N, K or L is symbolic (one C2 variant then).
    Cost O(17).
    """
    if n is None or k is None or l is None:
        return []
    return _probe_buckets(lambda p: select_sm90_decode(p, n, k, l, dtype) or ("tile", *select_sm90(p, n, k, l, dtype)))


def _probe_buckets(choice_at) -> list[tuple[int, int | None, tuple]]:
    """``choice_at(p)`` at every :data:`BUCKET_PROBES` value, consecutive probes with one
    choice merged into a bucket ``[lo, hi]`` (``(previous probe, p]``), the last one open."""
    out: list[tuple[int, int | None, tuple]] = []
    for p in BUCKET_PROBES:
        choice = choice_at(p)
        if out and out[-1][2] == choice:
            out[-1] = (out[-1][0], p, choice)
        else:
            out.append((1 if not out else out[-1][1] + 1, p, choice))
    lo, _, choice = out[-1]
    out[-1] = (lo, None, choice)
    return out


def sm90_dim_buckets(dim: str, m: int | None, n: int | None, k: int | None, l: int | None,
                     dtype: str) -> list[tuple[int, int | None, tuple]]:
    """Run-time buckets of an sm_90a GEMM whose N or K (``dim``: "n" or "k") is the one
    symbolic dim (M, L and the other static), as :func:`sm90_buckets` does for M: the static
    rule :func:`select_sm90` evaluated at the probes 1, 2, 4, ..., 65536 of that dim,
    consecutive probes with one choice merged into a bucket ``(p, 2p]``, the last one open.
    Only ``("tile", ...)`` choices: split-K sizes its fp32 partials by a static N, and the
    decode tiles need one. Empty unless exactly ``dim`` is symbolic. Cost O(17)."""
    dims = {"m": m, "n": n, "k": k, "l": l}
    if dim not in ("n", "k") or dims[dim] is not None or any(v is None for d, v in dims.items() if d != dim):
        return []

    def choice_at(p: int) -> tuple:
        probe = dict(dims, **{dim: p})
        return ("tile", *select_sm90(probe["m"], probe["n"], probe["k"], probe["l"], dtype))

    return _probe_buckets(choice_at)


def sm80_tile(m: int | None, n: int | None, k: int | None, l: int | None,
              dtype: str) -> tuple[Tile, int]:
    """``(tile, stages)`` for a 2.x sm_80 GEMM from the docs/codegen.md#ampere-units menu.

    Rule (CTA counts on a 132-SM H200, which also serves an A100's 108): symbolic dims ->
    medium; 128x256 tiles filling a wave (>= 132 CTAs) -> large; 128x128 giving >= 100 CTAs ->
    medium; at most 16 CTAs of 64x64 -> tiny; otherwise 64x128 (fewer than ~100 CTAs). The k
    extent scales with the dtype as :func:`scale_k`.
    """
    dtype_bits(dtype)
    if m is None or n is None or k is None or l is None:
        name = "medium"
    elif _tiles(m, n, l, SM80_MENU["large"][0]) >= H200_SM_COUNT:
        name = "large"
    elif _tiles(m, n, l, SM80_MENU["medium"][0]) >= 100:
        name = "medium"
    elif _tiles(m, n, l, SM80_MENU["tiny"][0]) <= 16:
        name = "tiny"
    else:
        name = "fewer_ctas"
    tile, stages = SM80_MENU[name]
    return scale_k(tile, dtype), stages


def select_conv_sm90(m: int | None, n: int, k: int, c: int) -> tuple[Tile, Tile, int]:
    """``(tile, cluster, stages)`` of an sm_90a conv (f16) from its implicit GEMM M = N*P*Q
    (None when the batch is symbolic), N = K (output channels), K = C*R*S, and the input
    channels ``c``; ``stages`` 0 means as many as shared memory holds.

    CUTLASS 3.x offers conv on Hopper only with the non-persistent warp-specialized kernel
    (one consumer warp group, so at most 128x128 accumulators; an epilogue overlaps another
    tile's mainloop only through a second CTA on the SM, which the default stage count,
    filling shared memory, leaves no room for):

    * k-tile: the largest of 64, 32, 16 channels dividing ``c`` (the im2col TMA loads one box
      of channels per filter tap; 0 when none does);
    * a short reduction (at most 4 k-tiles: the 1x1 layers with C <= 256, memory-bound) whose
      128x64 tiles fill a wave of 132 CTAs: 128x64 with 2 stages, so that several CTAs share
      an SM and one's loads overlap another's epilogue;
    * otherwise: N tile 64 when the layer has at most 64 output channels (else 128), M tile
      128 when that still gives a full wave (and for a symbolic batch), else 64; 4 stages
      (two CTAs an SM) when the tile is at most 64x128 and the grid fills a wave, else as many
      stages as fit (a 128x128 tile's 128 accumulator registers a thread leave room for one
      CTA anyway; a grid under one wave has no second CTA to overlap);
    * a 2x1 cluster (the two CTAs above each other share the filter tile through TMA
      multicast) when the grid has at least two M tiles.

    Measured on the H200, f16 conv+bias+relu, batch 32 (bench/gpu/conv_bench.py; run 1 with
    every tile at the full stage count, bench/gpu/results/h200_conv_sm90_run1_results.json, run
    2 with the short-reduction and 4-stage branches, h200_conv_sm90_results.json; ms, cuDNN's
    conv alone in brackets): 1x1 C=64 K=64 0.0178 -> 0.0116 (0.0081), C=64 K=256 0.0452 ->
    0.0379 (0.0207), C=256 K=64 0.0312 -> 0.0243 (0.0203), 3x3 C=64 K=64 (128x64, 4 stages)
    0.0368 -> 0.0285 (0.0265), 3x3 C=256 K=256 at 14x14 (64x128, 196 CTAs, 4 stages) 0.0262 ->
    0.0223 (0.0194). Grids under a wave (batch 1) lost 5-15 % with 4 stages (3x3 C=256 at 14x14:
    0.0102 -> 0.0115 ms; cuDNN 0.0092, 0.0096), hence the wave condition.

    Cost O(1).
    """
    tk = next((t for t in (64, 32, 16) if c % t == 0), 0)

    def fills(tm: int, tn: int) -> bool:
        return m is None or ceil(m / tm) * ceil(n / tn) >= H200_SM_COUNT

    if tk and ceil(k / tk) <= 4 and fills(128, 64):
        tm, tn, stages = 128, 64, 2
    else:
        tn = 64 if n <= 64 else 128
        tm = 128 if fills(128, tn) else 64
        stages = 4 if tm * tn <= 64 * 128 and fills(tm, tn) else 0
    cluster = (2, 1, 1) if m is None or ceil(m / tm) >= 2 else (1, 1, 1)
    return (tm, tn, tk), cluster, stages

__all__ = [
    "BUCKET_PROBES", "DECODE_FUSED_MIN_M", "H200_SM_COUNT", "SM80_MENU", "SM90_CANDIDATES", "SM90_SWIZZLES",
    "SPLIT_K_CANDIDATE", "SPLIT_K_MAX_M", "SPLIT_K_MIN_SLICE", "dtype_bits", "scale_k", "select_conv_sm90",
    "select_sm90", "select_sm90_decode", "select_sm90_split",
    "sm80_tile",
    "sm90_buckets", "sm90_dim_buckets",
]
