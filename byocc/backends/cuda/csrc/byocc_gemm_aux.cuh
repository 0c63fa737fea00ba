// byocc_gemm_aux.cuh: the helper kernels of the sm_90a GEMM tiers for shapes the TMA kernels
// do not fill or cannot read directly (docs/codegen.md#split-k, #unaligned-k):
//
//   * split-K reduction: out[i] = epilogue(sum_s parts[s * slice + i]), the fp32 partials of
//     a GEMM whose K was cut into `splits` slices (computed as a batch of `splits` GEMMs);
//   * zero padding: dst[b][r][c] = (r < rows && c < cols) ? src[b][r][c] : 0, a batch of
//     row-major matrices copied into a larger pitch (K padded to a multiple of 8 elements).
//
// In a library only when a GEMM step has such a tier.
#ifndef BYOCC_GEMM_AUX_CUH_
#define BYOCC_GEMM_AUX_CUH_

#include <stdint.h>
#include <cuda_runtime.h>

#include "byocc_generic.cuh"

namespace byocc {
namespace generic {

// ---------------------------------------------------------------- split-K reduction
// Four outputs per thread when the slice is a multiple of 4 (float4 loads of the partials).
template <typename TOut>
__global__ void __launch_bounds__(256) splitk_reduce_kernel(const float* parts, int64_t splits,
                                                            int64_t slice, Epilogue e, TOut* out) {
  using C = typename Num<TOut>::C;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t first = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (slice % 4 == 0) {
    const int64_t quads = slice / 4;
    for (int64_t q = first; q < quads; q += step) {
      float4 acc = reinterpret_cast<const float4*>(parts)[q];
      for (int64_t s = 1; s < splits; ++s) {
        const float4 v = reinterpret_cast<const float4*>(parts + s * slice)[q];
        acc.x += v.x; acc.y += v.y; acc.z += v.z; acc.w += v.w;
      }
      epilogue_store<TOut>(static_cast<C>(acc.x), 4 * q, e, out);
      epilogue_store<TOut>(static_cast<C>(acc.y), 4 * q + 1, e, out);
      epilogue_store<TOut>(static_cast<C>(acc.z), 4 * q + 2, e, out);
      epilogue_store<TOut>(static_cast<C>(acc.w), 4 * q + 3, e, out);
    }
    return;
  }
  for (int64_t i = first; i < slice; i += step) {
    float acc = parts[i];
    for (int64_t s = 1; s < splits; ++s) acc += parts[s * slice + i];
    epilogue_store<TOut>(static_cast<C>(acc), i, e, out);
  }
}

// out (row-major, e.shape, `slice` elements) = epilogue(sum of the `splits` partial slices).
template <typename TOut>
int launch_splitk_reduce(const void* parts, int64_t splits, int64_t slice, const Epilogue& e, void* out,
                         int sm_count, cudaStream_t stream) {
  if (slice == 0) return BYOCC_OK;
  if (splits < 1 || reinterpret_cast<uintptr_t>(parts) % 16 != 0) {
    return byocc::fail(BYOCC_E_UNSUPPORTED, "byocc split-K reduction: %lld slices, partials at %p",
                       static_cast<long long>(splits), parts);
  }
  const int64_t work = slice % 4 == 0 ? slice / 4 : slice;
  splitk_reduce_kernel<TOut><<<grid_for(work, 256, sm_count), 256, 0, stream>>>(
      static_cast<const float*>(parts), splits, slice, e, static_cast<TOut*>(out));
  return byocc::check_launch("byocc split-K reduction");
}

// ---------------------------------------------------------------- zero padding
// One thread writes 8 consecutive elements of a padded row (cols_p is a multiple of 8 and dst
// 16-byte aligned: one 16-byte store); the source is read element by element.
template <typename T>
__global__ void __launch_bounds__(256) pad_kernel(const T* src, T* dst, int64_t batches, int64_t rows,
                                                  int64_t cols, int64_t rows_p, int64_t cols_p) {
  static_assert(sizeof(T) == 2, "pad_kernel moves 16-bit elements");
  const int64_t groups = cols_p / 8;
  const int64_t total = batches * rows_p * groups;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t g = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; g < total; g += step) {
    const int64_t c0 = (g % groups) * 8;
    const int64_t br = g / groups;
    const int64_t r = br % rows_p;
    const int64_t b = br / rows_p;
    union { uint4 v; T e[8]; } pack;
    pack.v = make_uint4(0u, 0u, 0u, 0u);
    if (r < rows) {
      const T* row = src + (b * rows + r) * cols;
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        if (c0 + j < cols) pack.e[j] = row[c0 + j];
      }
    }
    reinterpret_cast<uint4*>(dst + (b * rows_p + r) * cols_p)[c0 / 8] = pack.v;
  }
}

template <typename T>
int launch_pad(const void* src, void* dst, int64_t batches, int64_t rows, int64_t cols, int64_t rows_p,
               int64_t cols_p, int sm_count, cudaStream_t stream) {
  if (rows_p < rows || cols_p < cols || cols_p % 8 != 0 || reinterpret_cast<uintptr_t>(dst) % 16 != 0) {
    return byocc::fail(BYOCC_E_UNSUPPORTED, "byocc zero padding: %lld x %lld into %lld x %lld",
                       static_cast<long long>(rows), static_cast<long long>(cols),
                       static_cast<long long>(rows_p), static_cast<long long>(cols_p));
  }
  const int64_t work = batches * rows_p * (cols_p / 8);
  if (work == 0) return BYOCC_OK;
  pad_kernel<T><<<grid_for(work, 256, sm_count), 256, 0, stream>>>(
      static_cast<const T*>(src), static_cast<T*>(dst), batches, rows, cols, rows_p, cols_p);
  return byocc::check_launch("byocc zero padding");
}

}  // namespace generic
}  // namespace byocc

#endif  // BYOCC_GEMM_AUX_CUH_
