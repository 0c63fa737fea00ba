"""Tile menus and the deterministic kernel choice for CUTLASS GEMMs (spec/backends.md 7.4, 7.7).

* :func:`select_sm90`: byocc's H200 rule over the four sm_90a candidates C1..C4;
* :func:`sm80_tile`: the 2.x tile/stage menu (large, medium, fewer CTAs, tiny).

Both are pure functions of the problem (M, N, K, L; ``None`` for a symbolic dim) and the input
dtype, so the number of distinct compiled units stays small (spec 13).
"""

from __future__ import annotations

from math import ceil
from typing import Literal

#: SMs of the H200 the rule is tuned for (spec 7.7).
H200_SM_COUNT = 132

Schedule = Literal["cooperative", "pingpong"]
Tile = tuple[int, int, int]

#: spec 7.7 candidates for 16-bit inputs: name -> (tile, cluster, schedule).
SM90_CANDIDATES: dict[str, tuple[Tile, Tile, Schedule]] = {
    "C1": ((128, 256, 64), (2, 1, 1), "cooperative"),
    "C2": ((128, 128, 64), (1, 2, 1), "cooperative"),
    "C3": ((64, 128, 64), (1, 1, 1), "pingpong"),
    "C4": ((64, 256, 64), (1, 1, 1), "pingpong"),
}

#: 2.x menu for 16-bit inputs (warp tile 64x64x32): name -> (tile, stages).
SM80_MENU: dict[str, tuple[Tile, int]] = {
    "large": ((128, 256, 32), 3),
    "medium": ((128, 128, 32), 4),
    "fewer_ctas": ((64, 128, 32), 6),
    "tiny": ((64, 64, 32), 10),
}

_DTYPE_BITS = {"float16": 16, "bfloat16": 16, "float32": 32, "int8": 8, "uint8": 8}


def dtype_bits(dtype: str) -> int:
    """Bits of one element of a GEMM input dtype."""
    try:
        return _DTYPE_BITS[dtype]
    except KeyError:
        raise ValueError(f"unsupported GEMM input dtype {dtype!r}") from None


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


def select_sm90(m: int | None, n: int | None, k: int | None, l: int | None,
                dtype: str) -> tuple[Tile, Tile, Schedule, bool]:
    """``(tile, cluster, schedule, stream_k)`` for an sm_90a GEMM: spec 7.7's H200 rule with
    the wave-starved branch re-chosen from measurements.

    Steps: (1) a symbolic dim takes C2 without stream-K; (2) the first of C1, C2 with at least
    132 tiles and wave efficiency >= 0.75; (3) otherwise C3 (64x128x64 ping-pong); (4) only
    when even C3 has fewer than 16 tiles and K >= 4096, C2 with the stream-K scheduler.

    Why (bench/gpu/sched_sweep.py on the H200, f16 TN bias+ReLU, TFLOP/s): the spec's
    "C2 + stream-K when tiles < 66 and K >= 2048" ran 128x4096x4096 at 194 (split-K 2: 208,
    128x64 tiles + split-K 2: 277) where C3 ran 305 (cuBLASLt 279-293); 64x4096x4096 86 vs
    C3 136; 256x4096x4096 366 vs C3 566; 1000x1024x520 C2 126, C3 126. Step 4 is kept for
    problems too small for any wave (unmeasured). CUTLASS's ping-pong kernel rejects the
    stream-K scheduler, so stream-K applies to cooperative C2 only. The k-tile follows
    :func:`scale_k`. Cost O(1).
    """
    dtype_bits(dtype)
    if m is None or n is None or k is None or l is None:
        tile, cluster, schedule = SM90_CANDIDATES["C2"]
        return scale_k(tile, dtype), cluster, schedule, False
    for name in ("C1", "C2"):
        tile, cluster, schedule = SM90_CANDIDATES[name]
        tiles = _tiles(m, n, l, tile)
        if tiles >= H200_SM_COUNT and _wave_efficiency(tiles, H200_SM_COUNT) >= 0.75:
            return scale_k(tile, dtype), cluster, schedule, False
    tile, cluster, schedule = SM90_CANDIDATES["C3"]
    if _tiles(m, n, l, tile) < 16 and k >= 4096:
        tile, cluster, schedule = SM90_CANDIDATES["C2"]
        return scale_k(tile, dtype), cluster, schedule, True
    return scale_k(tile, dtype), cluster, schedule, False


def sm80_tile(m: int | None, n: int | None, k: int | None, l: int | None,
              dtype: str) -> tuple[Tile, int]:
    """``(tile, stages)`` for a 2.x sm_80 GEMM from the spec 7.4 menu.

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


__all__ = [
    "H200_SM_COUNT", "SM80_MENU", "SM90_CANDIDATES", "dtype_bits", "scale_k", "select_sm90",
    "sm80_tile",
]
