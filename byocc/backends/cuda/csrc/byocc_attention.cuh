// byocc_attention.cuh: byocc's fused attention kernel (fixed code, shipped with byocc).
//
// FlashAttention-2-style forward pass: online softmax, no score matrix in memory. One CTA of
// 128 threads (4 warps) per (batch, head, block of kRows = 32 query rows); key/value tiles
// of kCols = 32 rows are streamed through shared memory. Arithmetic is SIMT fp32 FMA (no
// tensor cores): scores, softmax statistics (running max m and sum l per row) and the output
// accumulator are fp32 for every input dtype (half, nv_bfloat16, float).
//
// Work split: warp w owns query rows w*8 .. w*8+7 of the block for the whole pass.
//   1. scores: lane j computes s[r] = q[r] . k[j] for its 8 rows (k rows padded in shared
//      memory so the 32 lanes hit 32 banks), then s = s * scale + bias, masked to -inf;
//   2. softmax: row max and row sum are full-warp shuffles; the running statistics live in
//      registers (every lane holds the same copy); P = exp(s - m) goes to shared memory;
//   3. output: lane owns dims lane + 32 c of its 8 rows: acc = acc * exp(m_old - m_new) + P . V.
// At the end out = acc / l. A row whose every score is masked (or -inf) has l = 0 and gives
// 0 / 0 = NaN, as the reference softmax does. Key tiles wholly outside a causal mask or
// window are skipped; partial tiles and rows past seq_q / seq_kv are masked.
//
// kD is the compile-time head-dim bucket (32, 64, 128, 256): any head_dim and head_dim_v up
// to kD work (dims past them are zero in shared memory). Shared memory: about
// (3 * 32 * (kD + 1) + 32 * 33) * 4 bytes (102 KiB for kD = 256), opted in at launch.
//
// Entry (launch): byocc::attention::launch<T, kD>(params, stream) -> cudaError_t as int.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

#include "byocc_attention.h"
#include "byocc_generic.cuh"

namespace byocc {
namespace attention {

using generic::Num;

constexpr int kRows = 32;     // query rows per CTA
constexpr int kCols = 32;     // keys per tile (one per lane)
constexpr int kWarps = 4;
constexpr int kThreads = 32 * kWarps;
constexpr int kRowsPerWarp = kRows / kWarps;
constexpr float kLog2e = 1.4426950408889634f;

template <int kD>
struct Shared {
  float q[kRows][kD + 1];   // padded: lane j reads row j of k at one bank per lane
  float k[kCols][kD + 1];
  float v[kCols][kD];
  float p[kRows][kCols + 1];
};

__device__ __forceinline__ float warp_max(float x) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, o));
  return x;
}

__device__ __forceinline__ float warp_sum(float x) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) x += __shfl_xor_sync(0xffffffffu, x, o);
  return x;
}

// rows x kD elements of a (seq, head_dim) slice at base (row stride ld) into dst, zero outside
// [0, valid_rows) x [0, dims).
template <typename T, int kD, int kPitch>
__device__ __forceinline__ void load_tile(float (*dst)[kPitch], const T* base, int64_t ld, int rows,
                                          int64_t valid_rows, int64_t dims) {
  for (int idx = threadIdx.x; idx < rows * kD; idx += kThreads) {
    const int r = idx / kD;
    const int d = idx - r * kD;
    float x = 0.f;
    if (r < valid_rows && d < dims) x = Num<T>::load(base[r * ld + d]);
    dst[r][d] = x;
  }
}

template <typename T, int kD>
__global__ void __launch_bounds__(kThreads) attention_kernel(const Params p) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  Shared<kD>& sh = *reinterpret_cast<Shared<kD>*>(smem_raw);
  constexpr int kC = kD / 32;  // output dims per lane

  const int64_t q_blocks = (p.seq_q + kRows - 1) / kRows;
  const int64_t linear = blockIdx.x;
  const int64_t qb = linear % q_blocks;
  const int64_t n = (linear / q_blocks) % p.heads;
  const int64_t b = linear / (q_blocks * p.heads);
  const int64_t nk = n / (p.heads / p.kv_heads);
  const int64_t row0 = qb * kRows;
  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;

  const T* q = static_cast<const T*>(p.q) + b * p.q_stride[0] + row0 * p.q_stride[1] + n * p.q_stride[2];
  const T* k = static_cast<const T*>(p.k) + b * p.k_stride[0] + nk * p.k_stride[2];
  const T* v = static_cast<const T*>(p.v) + b * p.v_stride[0] + nk * p.v_stride[2];
  const T* bias = p.bias == nullptr ? nullptr
                  : static_cast<const T*>(p.bias) + b * p.bias_stride[0] + n * p.bias_stride[1];

  load_tile<T, kD, kD + 1>(sh.q, q, p.q_stride[1], kRows, p.seq_q - row0, p.head_dim);

  // The keys any row of this block can see.
  const bool causal = p.mask != kNoMask;
  const int64_t offset = p.mask == kBottomRight ? p.seq_kv - p.seq_q : 0;
  const int64_t last_row = (row0 + kRows < p.seq_q ? row0 + kRows : p.seq_q) - 1;
  int64_t kv_end = p.seq_kv;
  int64_t kv_begin = 0;
  if (causal) {
    kv_end = last_row + offset + 1 < kv_end ? last_row + offset + 1 : kv_end;
    if (p.window > 0) {
      const int64_t lo = row0 + offset - (p.window - 1);
      kv_begin = lo > 0 ? lo / kCols * kCols : 0;
    }
  }

  float m[kRowsPerWarp], l[kRowsPerWarp], acc[kRowsPerWarp][kC];
#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r) {
    m[r] = -INFINITY;
    l[r] = 0.f;
#pragma unroll
    for (int c = 0; c < kC; ++c) acc[r][c] = 0.f;
  }

  for (int64_t j0 = kv_begin; j0 < kv_end; j0 += kCols) {
    __syncthreads();  // every warp is done with the previous tile (and q is stored)
    load_tile<T, kD, kD + 1>(sh.k, k + j0 * p.k_stride[1], p.k_stride[1], kCols, p.seq_kv - j0, p.head_dim);
    load_tile<T, kD, kD>(sh.v, v + j0 * p.v_stride[1], p.v_stride[1], kCols, p.seq_kv - j0, p.head_dim_v);
    __syncthreads();

    // 1. scores of rows warp*8 + r against key j0 + lane
    float s[kRowsPerWarp];
#pragma unroll
    for (int r = 0; r < kRowsPerWarp; ++r) s[r] = 0.f;
#pragma unroll 8
    for (int d = 0; d < kD; ++d) {
      const float kd = sh.k[lane][d];
#pragma unroll
      for (int r = 0; r < kRowsPerWarp; ++r) s[r] = fmaf(sh.q[warp * kRowsPerWarp + r][d], kd, s[r]);
    }
    const int64_t j = j0 + lane;
#pragma unroll
    for (int r = 0; r < kRowsPerWarp; ++r) {
      const int64_t i = row0 + warp * kRowsPerWarp + r;
      bool keep = i < p.seq_q && j < p.seq_kv;
      if (causal) keep = keep && j <= i + offset && (p.window <= 0 || j >= i + offset - (p.window - 1));
      float x = -INFINITY;
      if (keep) {
        x = s[r] * p.scale;
        if (bias != nullptr) x += Num<T>::load(bias[i * p.bias_stride[2] + j * p.bias_stride[3]]);
        x *= kLog2e;  // exp(x - m) == exp2(x * log2e - m * log2e)
      }
      // 2. online softmax (base 2)
      const float m_new = fmaxf(m[r], warp_max(x));
      const float m_use = m_new == -INFINITY ? 0.f : m_new;  // a row with nothing visible yet
      const float e = exp2f(x - m_use);
      const float corr = exp2f(m[r] - m_use);
      l[r] = l[r] * corr + warp_sum(e);
      m[r] = m_new;
      sh.p[warp * kRowsPerWarp + r][lane] = e;
#pragma unroll
      for (int c = 0; c < kC; ++c) acc[r][c] *= corr;
    }
    __syncwarp();
    // 3. acc += P . V (the warp reads only its own rows of P)
#pragma unroll 4
    for (int jj = 0; jj < kCols; ++jj) {
      float vj[kC];
#pragma unroll
      for (int c = 0; c < kC; ++c) vj[c] = sh.v[jj][lane + 32 * c];
#pragma unroll
      for (int r = 0; r < kRowsPerWarp; ++r) {
        const float pr = sh.p[warp * kRowsPerWarp + r][jj];
#pragma unroll
        for (int c = 0; c < kC; ++c) acc[r][c] = fmaf(pr, vj[c], acc[r][c]);
      }
    }
    __syncwarp();
  }

  T* out = static_cast<T*>(p.out) + b * p.out_stride[0] + n * p.out_stride[2];
#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r) {
    const int64_t i = row0 + warp * kRowsPerWarp + r;
    if (i >= p.seq_q) continue;
    const float inv = 1.f / l[r];  // l == 0: every key masked -> NaN (0 * inf)
#pragma unroll
    for (int c = 0; c < kC; ++c) {
      const int d = lane + 32 * c;
      if (d < p.head_dim_v) {
        const float y = l[r] == 0.f ? NAN : acc[r][c] * inv;
        out[i * p.out_stride[1] + d] = Num<T>::store(y);
      }
    }
  }
}

// Launches the kernel for p on stream; returns a cudaError_t (0: success). head_dim and
// head_dim_v must be at most kD and heads a multiple of kv_heads (the wrapper checks both).
template <typename T, int kD>
int launch(const Params& p, cudaStream_t stream) {
  if (p.head_dim > kD || p.head_dim_v > kD || p.kv_heads <= 0 || p.heads % p.kv_heads != 0) {
    return static_cast<int>(cudaErrorInvalidValue);
  }
  const int64_t q_blocks = (p.seq_q + kRows - 1) / kRows;
  const int64_t blocks = q_blocks * p.heads * p.batch;
  if (blocks == 0) return static_cast<int>(cudaSuccess);
  if (blocks > 0x7fffffffLL) return static_cast<int>(cudaErrorInvalidConfiguration);
  const size_t smem = sizeof(Shared<kD>);
  cudaError_t err = cudaFuncSetAttribute(attention_kernel<T, kD>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         static_cast<int>(smem));
  if (err != cudaSuccess) return static_cast<int>(err);
  attention_kernel<T, kD><<<static_cast<unsigned>(blocks), kThreads, smem, stream>>>(p);
  return static_cast<int>(cudaGetLastError());
}

}  // namespace attention
}  // namespace byocc
