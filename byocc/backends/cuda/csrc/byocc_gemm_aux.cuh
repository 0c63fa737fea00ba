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
#include <type_traits>
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
// Block row y handles padded rows y, y + gridDim.y, ...; a thread writes 8 consecutive
// elements of a padded row (cols_p is a multiple of 8 and dst 16-byte aligned: one 16-byte
// store) and reads the source V elements at a time (V divides cols and the source is aligned
// to V elements, so every source row starts aligned too).
template <typename T, int V>
__global__ void __launch_bounds__(256) pad_kernel(const T* src, T* dst, int64_t batches, int64_t rows,
                                                  int64_t cols, int64_t rows_p, int64_t cols_p) {
  static_assert(sizeof(T) == 2, "pad_kernel moves 16-bit elements");
  using Vec = typename std::conditional<V == 8, uint4, typename std::conditional<V == 4, uint2,
              typename std::conditional<V == 2, uint32_t, uint16_t>::type>::type>::type;
  const int64_t groups = cols_p / 8;
  for (int64_t br = blockIdx.y; br < batches * rows_p; br += gridDim.y) {
    const int64_t r = br % rows_p;
    const int64_t b = br / rows_p;
    const T* row = src + (b * rows + r) * cols;
    uint4* out = reinterpret_cast<uint4*>(dst + br * cols_p);
    for (int64_t g = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; g < groups;
         g += static_cast<int64_t>(gridDim.x) * blockDim.x) {
      const int64_t c0 = g * 8;
      union { uint4 v; Vec part[8 / V]; T e[8]; } pack;
      pack.v = make_uint4(0u, 0u, 0u, 0u);
      if (r < rows) {
        if (c0 + 8 <= cols) {
          const Vec* in = reinterpret_cast<const Vec*>(row + c0);
#pragma unroll
          for (int j = 0; j < 8 / V; ++j) pack.part[j] = in[j];
        } else {
          for (int j = 0; j < 8 && c0 + j < cols; ++j) pack.e[j] = row[c0 + j];
        }
      }
      out[g] = pack.v;
    }
  }
}

template <typename T>
int launch_pad(const void* src, void* dst, int64_t batches, int64_t rows, int64_t cols, int64_t rows_p,
               int64_t cols_p, int sm_count, cudaStream_t stream) {
  (void)sm_count;
  if (rows_p < rows || cols_p < cols || cols_p % 8 != 0 || reinterpret_cast<uintptr_t>(dst) % 16 != 0) {
    return byocc::fail(BYOCC_E_UNSUPPORTED, "byocc zero padding: %lld x %lld into %lld x %lld",
                       static_cast<long long>(rows), static_cast<long long>(cols),
                       static_cast<long long>(rows_p), static_cast<long long>(cols_p));
  }
  const int64_t groups = cols_p / 8;
  const int64_t padded_rows = batches * rows_p;
  if (groups == 0 || padded_rows == 0) return BYOCC_OK;
  const int threads = groups >= 256 ? 256 : static_cast<int>((groups + 31) / 32 * 32);
  const int64_t bx = (groups + threads - 1) / threads;
  const dim3 grid(static_cast<unsigned>(bx < 64 ? bx : 64),
                  static_cast<unsigned>(padded_rows < 65535 ? padded_rows : 65535));
  const uintptr_t at = reinterpret_cast<uintptr_t>(src);
  const T* s = static_cast<const T*>(src);
  T* d = static_cast<T*>(dst);
  if (cols % 8 == 0 && at % 16 == 0) {
    pad_kernel<T, 8><<<grid, threads, 0, stream>>>(s, d, batches, rows, cols, rows_p, cols_p);
  } else if (cols % 4 == 0 && at % 8 == 0) {
    pad_kernel<T, 4><<<grid, threads, 0, stream>>>(s, d, batches, rows, cols, rows_p, cols_p);
  } else if (cols % 2 == 0 && at % 4 == 0) {
    pad_kernel<T, 2><<<grid, threads, 0, stream>>>(s, d, batches, rows, cols, rows_p, cols_p);
  } else {
    pad_kernel<T, 1><<<grid, threads, 0, stream>>>(s, d, batches, rows, cols, rows_p, cols_p);
  }
  return byocc::check_launch("byocc zero padding");
}

}  // namespace generic
}  // namespace byocc

#endif  // BYOCC_GEMM_AUX_CUH_
