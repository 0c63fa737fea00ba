// byocc_attention_sm90.cuh: byocc's tensor-core fused attention for sm_90a (fixed code,
// shipped with byocc). Included by the generated units src/kernels/attention_sm90_*.cu, one
// per (dtype, head-dim bucket, mask) a model uses.
//
// The kernel is CUTLASS's Hopper FMHA forward pass (examples/88_hopper_fmha of the CUTLASS
// sources the nvidia-cutlass wheel ships; the build adds that folder to the include path):
// TMA loads, a producer warp group and two consumer warp groups (cooperative schedule),
// WGMMA for Q K^T and P V, online softmax in fp32. byocc takes from it the kernel builder
// (FmhaBuilder), its collectives, kernels and tile schedulers, and writes here:
//   * MaskFusion: the masks of R.nn.attention (none, TopLeft, BottomRight) and the key tail
//     (keys j >= seq_kv are masked, so any seq_kv works), in the example's fusion interface
//     (trip counts of key tiles, masking of the score tile before the softmax);
//   * the launch: strides of byocc::attention::Params (BSNH or stacked views, in elements)
//     as the example's (row, 1, (batch, head)) strides, the softmax scale of the IR (the
//     example's collective fixes it to 1/sqrt(head_dim); byocc overwrites it in the kernel
//     parameters), grouped-query heads as one launch per query head of a group (query and
//     output head stride group * H, key/value head stride H), and the run-time checks that
//     decide whether this kernel applies.
//
// Entries: byocc::attention::sm90::run<Element, kD, kMask>(params, lse, lse_bytes, stream)
// (cooperative schedule) and run_pingpong<Element, kD>(...) (ping-pong, no mask, shapes
// without tails) -> 0 (launched), kNotApplicable (nothing launched: the caller tries the next
// kernel, the last being the SIMT kernel of byocc_attention.cuh), or a cudaError_t (> 0).
//
// The kernel applies when: head_dim == head_dim_v, head_dim % 8 == 0, head_dim <= kD;
// seq_q % 8 == 0 (the example's can_implement); scale > 0 (the collective's running max is
// taken before the scale); q, k, v and out 16-byte aligned with row, batch and head strides
// multiples of 8 elements and below 2^31, every element they reach below 2^31; BottomRight
// only with seq_kv >= seq_q (every row sees a key); the softmax statistics (lse, fp32,
// batch * heads * seq_q) fit in lse_bytes.
#pragma once

#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

#include "byocc_attention.h"
#include "cute/tensor.hpp"
#include "cutlass/cutlass.h"
#include "cutlass/device_kernel.h"
#include "cutlass/numeric_types.h"
#include "kernel/fmha_kernel_builder.hpp"  // examples/88_hopper_fmha (include path)

namespace byocc {
namespace attention {
namespace sm90 {

// The mask of the composite (kNoMask, kTopLeft, kBottomRight of byocc_attention.h) plus the
// key tail, in the interface of 88_hopper_fmha's fusions. Positions are global (query row i,
// key j); the problem size is (batch, heads, seq_q, seq_kv, head_dim). Key tiles a whole
// query tile sees are "unmasked" (no masking work), the others "masked"; the mainloop runs
// the unmasked ones first, then the masked ones, then stops (trip count).
template <int kMask>
struct MaskFusion {
  template <class ProblemSize>
  CUTLASS_DEVICE static int diagonal(ProblemSize const& ps) {  // key j is visible to row i iff j <= i + diagonal
    return kMask == kBottomRight ? int(cute::get<3>(ps)) - int(cute::get<2>(ps)) : 0;
  }

  template <class BlkCoord, class TileShape, class ProblemSize>
  CUTLASS_DEVICE int get_trip_count(BlkCoord const& blk, TileShape const& tile, ProblemSize const& ps) {
    const int tk = int(cute::get<1>(tile));
    int n = (int(cute::get<3>(ps)) + tk - 1) / tk;
    if constexpr (kMask != kNoMask) {
      const int end = (int(cute::get<0>(blk)) + 1) * int(cute::get<0>(tile)) + diagonal(ps);  // keys < end
      const int causal = (end + tk - 1) / tk;
      n = causal < n ? causal : n;
    }
    return n;
  }

  template <class BlkCoord, class TileShape, class ProblemSize>
  CUTLASS_DEVICE int get_unmasked_trip_count(BlkCoord const& blk, TileShape const& tile, ProblemSize const& ps) {
    const int tk = int(cute::get<1>(tile));
    int full = int(cute::get<3>(ps)) / tk;  // tiles without key tail
    if constexpr (kMask != kNoMask) {
      // tiles whose last key every row of the query tile sees: (t + 1) * tk - 1 <= row0 + diagonal
      const int seen = (int(cute::get<0>(blk)) * int(cute::get<0>(tile)) + diagonal(ps) + 1) / tk;
      full = seen < full ? seen : full;
    }
    const int trips = get_trip_count(blk, tile, ps);
    return full < trips ? full : trips;
  }

  template <class BlkCoord, class TileShape, class ProblemSize>
  CUTLASS_DEVICE int get_masked_trip_count(BlkCoord const& blk, TileShape const& tile, ProblemSize const& ps) {
    return get_trip_count(blk, tile, ps) - get_unmasked_trip_count(blk, tile, ps);
  }

  template <class AccQK, class IndexQK, class ProblemSize>
  CUTLASS_DEVICE void before_softmax(AccQK& acc_qk, IndexQK const& index_qk, ProblemSize const& ps) {
    const int seq_kv = int(cute::get<3>(ps));
    const int diag = diagonal(ps);
    CUTLASS_PRAGMA_UNROLL
    for (int e = 0; e < cute::size(acc_qk); ++e) {
      const auto pos = index_qk(e);
      const int i = int(cute::get<0>(pos));
      const int j = int(cute::get<1>(pos));
      bool masked = j >= seq_kv;
      if constexpr (kMask != kNoMask) masked = masked || j > i + diag;
      if (masked) acc_qk(e) = -INFINITY;
    }
  }
};

using Stride = cute::tuple<int, cute::_1, cute::tuple<int, int>>;  // (row, dim, (batch, head))
using StrideLse = cute::tuple<cute::_1, cute::tuple<int, int>>;   // (row, (batch, head))

// One kernel configuration: tile (query rows, keys, head dim) and schedule (the example's
// cooperative or ping-pong warp specialization; ping-pong is persistent and loads Q in its
// own warp). bench/gpu/attn_probe.py times configurations of it.
template <class Element, class TileShape, class Schedule, int kMask>
using Config = typename cutlass::fmha::kernel::FmhaBuilder<Element, float, float, TileShape, Stride, Stride, Stride,
                                                           MaskFusion<kMask>, Schedule>::Kernel;

using Cooperative = cutlass::gemm::KernelTmaWarpSpecializedCooperative;
using Pingpong = cutlass::gemm::KernelTmaWarpSpecializedPingpong;

// byocc's choice per head-dim bucket (fp16/bf16), measured on the H200 (bench/gpu/results/
// h200_attn_probe.md, h200_attn_probe2.md): cooperative tiles 128x128x64, 128x128x128 and
// 128x64x256 for every mask; for no mask and shapes without query or key tails, ping-pong
// 128x128x64 and 128x128x128 (1.01x SDPA at head dim 128, against 0.95-0.99x for
// cooperative). Head dim 64 takes 128 keys a tile, as CUTLASS's 88_hopper_fmha does: ping-pong
// (8, 512, 16, 64) 0.976x SDPA against 0.874x with 64 keys, (8, 2048, 16, 64) 0.928x against
// 0.738x; causal cooperative 0.740x / 0.822x against 0.731x / 0.711x. Head dim 128 keeps 128
// keys for causal too (64 keys: 0.850x against 0.946x).
template <int kD>
struct Tiles;
template <>
struct Tiles<64> {
  using Shape = cute::Shape<cute::_128, cute::_128, cute::_64>;
  using PingpongShape = cute::Shape<cute::_128, cute::_128, cute::_64>;
};
template <>
struct Tiles<128> {
  using Shape = cute::Shape<cute::_128, cute::_128, cute::_128>;
  using PingpongShape = cute::Shape<cute::_128, cute::_128, cute::_128>;
};
template <>
struct Tiles<256> {
  using Shape = cute::Shape<cute::_128, cute::_64, cute::_256>;
};

template <class Element, int kD, int kMask>
using Kernel = Config<Element, typename Tiles<kD>::Shape, Cooperative, kMask>;

inline bool fits_int(int64_t x) { return x >= 0 && x < (int64_t(1) << 31); }
inline bool strides_ok(const int64_t (&s)[3]) {
  for (int64_t x : s) {
    if (!fits_int(x) || x % 8 != 0) return false;
  }
  return true;
}
inline bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }
// The kernel indexes in int: every element a view reaches must be below 2^31.
inline bool extent_ok(const int64_t (&s)[3], int64_t batch, int64_t seq, int64_t heads, int64_t dim) {
  return fits_int((batch - 1) * s[0] + (seq - 1) * s[1] + (heads - 1) * s[2] + dim);
}

// Whether the fused kernel of bucket kD runs p (the rules in the file comment).
template <int kD>
bool applies(const Params& p, uint64_t lse_bytes) {
  if (p.head_dim != p.head_dim_v || p.head_dim % 8 != 0 || p.head_dim > kD || p.head_dim <= 0) return false;
  if (p.bias != nullptr || p.window > 0 || !(p.scale > 0.f) || !isfinite(p.scale)) return false;
  if (p.seq_q <= 0 || p.seq_kv <= 0 || p.seq_q % 8 != 0 || !fits_int(p.seq_q) || !fits_int(p.seq_kv)) return false;
  if (p.mask == kBottomRight && p.seq_kv < p.seq_q) return false;
  if (p.kv_heads <= 0 || p.heads % p.kv_heads != 0 || p.batch <= 0 || p.batch > 65535 || p.heads > 65535) return false;
  if (!aligned16(p.q) || !aligned16(p.k) || !aligned16(p.v) || !aligned16(p.out)) return false;
  if (!strides_ok(p.q_stride) || !strides_ok(p.k_stride) || !strides_ok(p.v_stride) || !strides_ok(p.out_stride)) return false;
  const int64_t group = p.heads / p.kv_heads;
  if (!fits_int(group * p.q_stride[2]) || !fits_int(group * p.out_stride[2])) return false;
  if (!extent_ok(p.q_stride, p.batch, p.seq_q, p.heads, p.head_dim) ||
      !extent_ok(p.k_stride, p.batch, p.seq_kv, p.kv_heads, p.head_dim) ||
      !extent_ok(p.v_stride, p.batch, p.seq_kv, p.kv_heads, p.head_dim) ||
      !extent_ok(p.out_stride, p.batch, p.seq_q, p.heads, p.head_dim) || !fits_int(p.batch * p.kv_heads * p.seq_q)) {
    return false;
  }
  return uint64_t(p.batch) * uint64_t(p.kv_heads) * uint64_t(p.seq_q) * sizeof(float) <= lse_bytes;
}

// Runs p with kernel K of bucket kD (see the file comment for the return value). lse: fp32
// scratch of lse_bytes bytes for the kernel's softmax statistics (written, never read by byocc).
template <class K, class Element, int kD>
int run_kernel(const Params& p, void* lse, uint64_t lse_bytes, cudaStream_t stream) {
  if (!applies<kD>(p, lse_bytes)) return kNotApplicable;
  if (uint64_t(p.batch) * uint64_t(p.kv_heads) * uint64_t((p.seq_q + 127) / 128) >= (uint64_t(1) << 31)) {
    return kNotApplicable;  // the grid
  }
  const int smem = K::SharedStorageSize;
  cudaError_t err = cudaFuncSetAttribute(cutlass::device_kernel<K>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  if (err != cudaSuccess) return static_cast<int>(err);
  // Grouped-query heads: launch g runs query heads n = m * group + g (m: the key/value head)
  // of every batch, so each launch is plain multi-head attention over kv_heads heads.
  const int group = static_cast<int>(p.heads / p.kv_heads);
  const int heads = static_cast<int>(p.kv_heads);
  const int seq_q = static_cast<int>(p.seq_q);
  const Stride dq{int(p.q_stride[1]), cute::_1{}, {int(p.q_stride[0]), int(p.q_stride[2] * group)}};
  const Stride dk{int(p.k_stride[1]), cute::_1{}, {int(p.k_stride[0]), int(p.k_stride[2])}};
  const Stride dv{int(p.v_stride[1]), cute::_1{}, {int(p.v_stride[0]), int(p.v_stride[2])}};
  const Stride dout{int(p.out_stride[1]), cute::_1{}, {int(p.out_stride[0]), int(p.out_stride[2] * group)}};
  const StrideLse dlse{cute::_1{}, {heads * seq_q, seq_q}};
  constexpr float kLog2e = 1.4426950408889634f;
  // sm_count 0: the persistent (ping-pong) scheduler asks the current device for it
  const cutlass::KernelHardwareInfo hw{};
  auto arguments = [&](int g) {
    return typename K::Arguments{
        {static_cast<int>(p.batch), heads, seq_q, static_cast<int>(p.seq_kv), static_cast<int>(p.head_dim)},
        {static_cast<const Element*>(p.q) + g * p.q_stride[2], dq, static_cast<const Element*>(p.k), dk,
         static_cast<const Element*>(p.v), dv},
        {static_cast<Element*>(p.out) + g * p.out_stride[2], dout, static_cast<float*>(lse), dlse}, hw};
  };
  if (!K::can_implement(arguments(0))) return kNotApplicable;  // the same problem for every g
  for (int g = 0; g < group; ++g) {
    typename K::Params params = K::to_underlying_arguments(arguments(g), nullptr);
    params.mainloop.scale_softmax = p.scale;
    params.mainloop.scale_softmax_log2 = p.scale * kLog2e;
    const dim3 grid = K::get_grid_shape(params);
    const dim3 block = K::get_block_shape();
    cutlass::device_kernel<K><<<grid, block, smem, stream>>>(params);
    err = cudaGetLastError();
    if (err != cudaSuccess) return static_cast<int>(err);
  }
  return 0;
}

// byocc's cooperative kernel for (Element, bucket kD, mask): what the generated units call.
template <class Element, int kD, int kMask>
int run(const Params& p, void* lse, uint64_t lse_bytes, cudaStream_t stream) {
  return run_kernel<Kernel<Element, kD, kMask>, Element, kD>(p, lse, lse_bytes, stream);
}

// The ping-pong kernel of bucket kD (no mask): only for shapes without tails (seq_q a multiple
// of the 128 query rows, seq_kv of the key tile), the shapes it was checked on; else
// kNotApplicable and the caller runs the cooperative kernel.
template <class Element, int kD>
int run_pingpong(const Params& p, void* lse, uint64_t lse_bytes, cudaStream_t stream) {
  using Shape = typename Tiles<kD>::PingpongShape;
  constexpr int kRows = cute::get<0>(Shape{});
  constexpr int kKeys = cute::get<1>(Shape{});
  if (p.mask != kNoMask || p.seq_q % kRows != 0 || p.seq_kv % kKeys != 0) return kNotApplicable;
  return run_kernel<Config<Element, Shape, Pingpong, kNoMask>, Element, kD>(p, lse, lse_bytes, stream);
}

}  // namespace sm90
}  // namespace attention
}  // namespace byocc
