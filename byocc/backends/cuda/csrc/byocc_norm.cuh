// byocc_norm.cuh: byocc's layer_norm and rms_norm kernels (fixed code, shipped with byocc).
//
//   layer_norm: y = (x - mean) * rsqrt(var + eps) * gamma + beta   (biased variance)
//   rms_norm:   y = x * rsqrt(mean(x^2) + eps) * weight
//
// Rows are the product of the leading dims, N the last dim; x, y, gamma, beta and weight are
// compact and share one dtype (half, nv_bfloat16 or float). Statistics are computed in fp32
// from the values held in registers: every element of x is read from memory once and y
// written once (two passes over the registers, none over memory), so the kernels run at the
// copy rate of the device.
//
// Shapes of the launch, chosen by byocc::norm::launch from N:
//   * one warp per row while the row fits in 4 16-byte vectors per lane (N <= 1024 for
//     16-bit types): no shared memory, no __syncthreads;
//   * one CTA of 128-1024 threads per row up to 4 vectors per thread (N <= 32768 for
//     16-bit types), a shared-memory reduction across warps;
//   * longer rows: one CTA per row that reads the row twice (from L2), any N.
// 16-byte vectors are used when N * sizeof(T) is a multiple of 16 and every pointer is
// 16-byte aligned; otherwise the same kernels run with one element per vector.
//
// Entry points (extern "C", return cudaError_t as int; 0 is success):
//   byocc_layer_norm_{f16,bf16,f32}(x, gamma, beta, y, rows, n, eps, stream)
//   byocc_rms_norm_{f16,bf16,f32}(x, weight, y, rows, n, eps, stream)
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include "byocc_generic.cuh"

namespace byocc {
namespace norm {

// Element conversions are byocc_generic.cuh's (Num<T>::load / Num<T>::store).
using generic::Num;

// A vector of kVec elements of T, loaded and stored as one access.
template <typename T, int kVec>
struct alignas(sizeof(T) * kVec) Vec {
  T v[kVec];
};

template <typename T, int kVec>
__device__ __forceinline__ void load_vec(const T* p, float (&out)[kVec]) {
  Vec<T, kVec> r = *reinterpret_cast<const Vec<T, kVec>*>(p);
#pragma unroll
  for (int i = 0; i < kVec; ++i) out[i] = Num<T>::load(r.v[i]);
}

template <typename T, int kVec>
__device__ __forceinline__ void store_vec(T* p, const float (&in)[kVec]) {
  Vec<T, kVec> r;
#pragma unroll
  for (int i = 0; i < kVec; ++i) r.v[i] = Num<T>::store(in[i]);
  *reinterpret_cast<Vec<T, kVec>*>(p) = r;
}

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// Sum over the CTA; every thread gets the result. `red` holds one float per warp.
template <int kThreads>
__device__ __forceinline__ float block_sum(float v, float* red) {
  constexpr int kWarps = kThreads / 32;
  v = warp_sum(v);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  __syncthreads();  // red may still be read by the previous reduction
  if (lane == 0) red[warp] = v;
  __syncthreads();
  float t = lane < kWarps ? red[lane] : 0.f;
  return warp_sum(t);
}

struct Kind {
  static constexpr int kLayer = 0;
  static constexpr int kRms = 1;
};

// The whole normalisation of one row held in registers: kVpt vectors of kVec elements per
// thread, the row split over kLanes threads (a warp, or a CTA). `reduce` sums over them.
template <int kKind, typename T, int kVec, int kVpt, int kLanes, typename Reduce>
__device__ __forceinline__ void norm_row(const T* __restrict__ x, const T* __restrict__ gamma,
                                         const T* __restrict__ beta, T* __restrict__ y, int64_t n,
                                         float eps, int lane, Reduce reduce) {
  float v[kVpt][kVec];
  // gamma/beta are loaded with x, before the reductions, so their latency is hidden
  // behind the reductions instead of being paid after them.
  Vec<T, kVec> gv[kVpt], bv[kVpt];
  const int64_t nvec = n / kVec;
  float sum = 0.f;
#pragma unroll
  for (int j = 0; j < kVpt; ++j) {
    const int64_t c = static_cast<int64_t>(j) * kLanes + lane;
    if (c < nvec) {
      load_vec<T, kVec>(x + c * kVec, v[j]);
      gv[j] = *reinterpret_cast<const Vec<T, kVec>*>(gamma + c * kVec);
      if (kKind == Kind::kLayer) bv[j] = *reinterpret_cast<const Vec<T, kVec>*>(beta + c * kVec);
    } else {
#pragma unroll
      for (int i = 0; i < kVec; ++i) v[j][i] = 0.f;
    }
#pragma unroll
    for (int i = 0; i < kVec; ++i) sum += kKind == Kind::kLayer ? v[j][i] : v[j][i] * v[j][i];
  }
  const float inv_n = 1.f / static_cast<float>(n);
  float mean = 0.f, scale;
  if (kKind == Kind::kLayer) {
    mean = reduce(sum) * inv_n;
    float sq = 0.f;
#pragma unroll
    for (int j = 0; j < kVpt; ++j) {
      const int64_t c = static_cast<int64_t>(j) * kLanes + lane;
      if (c < nvec) {
#pragma unroll
        for (int i = 0; i < kVec; ++i) {
          const float d = v[j][i] - mean;
          sq += d * d;
        }
      }
    }
    scale = rsqrtf(reduce(sq) * inv_n + eps);
  } else {
    scale = rsqrtf(reduce(sum) * inv_n + eps);
  }
#pragma unroll
  for (int j = 0; j < kVpt; ++j) {
    const int64_t c = static_cast<int64_t>(j) * kLanes + lane;
    if (c < nvec) {
      float o[kVec];
      if (kKind == Kind::kLayer) {
#pragma unroll
        for (int i = 0; i < kVec; ++i)
          o[i] = (v[j][i] - mean) * scale * Num<T>::load(gv[j].v[i]) + Num<T>::load(bv[j].v[i]);
      } else {
#pragma unroll
        for (int i = 0; i < kVec; ++i) o[i] = v[j][i] * scale * Num<T>::load(gv[j].v[i]);
      }
      store_vec<T, kVec>(y + c * kVec, o);
    }
  }
}

// One warp per row; kWarps rows per CTA.
template <int kKind, typename T, int kVec, int kVpt, int kWarps>
__global__ void __launch_bounds__(kWarps * 32)
    warp_row_kernel(const T* __restrict__ x, const T* __restrict__ gamma,
                    const T* __restrict__ beta, T* __restrict__ y, int64_t rows, int64_t n,
                    float eps) {
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kWarps + threadIdx.x / 32;
  if (row >= rows) return;
  norm_row<kKind, T, kVec, kVpt, 32>(x + row * n, gamma, beta, y + row * n, n, eps,
                                     threadIdx.x % 32, [](float s) { return warp_sum(s); });
}

// One CTA of kThreads per row.
template <int kKind, typename T, int kVec, int kVpt, int kThreads>
__global__ void __launch_bounds__(kThreads)
    cta_row_kernel(const T* __restrict__ x, const T* __restrict__ gamma,
                   const T* __restrict__ beta, T* __restrict__ y, int64_t rows, int64_t n,
                   float eps) {
  __shared__ float red[kThreads / 32];
  const int64_t row = blockIdx.x;
  norm_row<kKind, T, kVec, kVpt, kThreads>(x + row * n, gamma, beta, y + row * n, n, eps,
                                           threadIdx.x,
                                           [&](float s) { return block_sum<kThreads>(s, red); });
}

// Any N: one CTA per row, the row read twice (statistics, then output), scalar accesses.
template <int kKind, typename T, int kThreads>
__global__ void __launch_bounds__(kThreads)
    long_row_kernel(const T* __restrict__ x, const T* __restrict__ gamma,
                    const T* __restrict__ beta, T* __restrict__ y, int64_t rows, int64_t n,
                    float eps) {
  __shared__ float red[kThreads / 32];
  const T* xr = x + static_cast<int64_t>(blockIdx.x) * n;
  T* yr = y + static_cast<int64_t>(blockIdx.x) * n;
  // Welford-free shifted sums: shift by the row's first element for a stable variance.
  const float shift = kKind == Kind::kLayer ? Num<T>::load(xr[0]) : 0.f;
  float s = 0.f, sq = 0.f;
  for (int64_t i = threadIdx.x; i < n; i += kThreads) {
    const float d = Num<T>::load(xr[i]) - shift;
    s += d;
    sq += d * d;
  }
  const float inv_n = 1.f / static_cast<float>(n);
  s = block_sum<kThreads>(s, red) * inv_n;
  sq = block_sum<kThreads>(sq, red) * inv_n;
  const float mean = kKind == Kind::kLayer ? shift + s : 0.f;
  const float var = kKind == Kind::kLayer ? fmaxf(sq - s * s, 0.f) : sq;
  const float scale = rsqrtf(var + eps);
  for (int64_t i = threadIdx.x; i < n; i += kThreads) {
    const float g = Num<T>::load(gamma[i]);
    float o = (Num<T>::load(xr[i]) - mean) * scale * g;
    if (kKind == Kind::kLayer) o += Num<T>::load(beta[i]);
    yr[i] = Num<T>::store(o);
  }
}

template <int kKind, typename T, int kVec, int kVpt>
cudaError_t launch_warp(const T* x, const T* g, const T* b, T* y, int64_t rows, int64_t n,
                        float eps, cudaStream_t s) {
  constexpr int kWarps = 4;
  const int64_t grid = (rows + kWarps - 1) / kWarps;
  warp_row_kernel<kKind, T, kVec, kVpt, kWarps>
      <<<static_cast<unsigned>(grid), kWarps * 32, 0, s>>>(x, g, b, y, rows, n, eps);
  return cudaGetLastError();
}

template <int kKind, typename T, int kVec, int kThreads>
cudaError_t launch_cta(int vpt, const T* x, const T* g, const T* b, T* y, int64_t rows,
                       int64_t n, float eps, cudaStream_t s) {
  const unsigned grid = static_cast<unsigned>(rows);
  switch (vpt) {
    case 1: cta_row_kernel<kKind, T, kVec, 1, kThreads><<<grid, kThreads, 0, s>>>(x, g, b, y, rows, n, eps); break;
    case 2: cta_row_kernel<kKind, T, kVec, 2, kThreads><<<grid, kThreads, 0, s>>>(x, g, b, y, rows, n, eps); break;
    case 3: cta_row_kernel<kKind, T, kVec, 3, kThreads><<<grid, kThreads, 0, s>>>(x, g, b, y, rows, n, eps); break;
    default: cta_row_kernel<kKind, T, kVec, 4, kThreads><<<grid, kThreads, 0, s>>>(x, g, b, y, rows, n, eps); break;
  }
  return cudaGetLastError();
}

// The register-resident kernels for vector width kVec (N a multiple of kVec).
template <int kKind, typename T, int kVec>
cudaError_t launch_vec(const T* x, const T* g, const T* b, T* y, int64_t rows, int64_t n,
                       float eps, cudaStream_t s, bool* done) {
  *done = true;
  const int64_t nvec = n / kVec;
  if (nvec <= 32) return launch_warp<kKind, T, kVec, 1>(x, g, b, y, rows, n, eps, s);
  if (nvec <= 64) return launch_warp<kKind, T, kVec, 2>(x, g, b, y, rows, n, eps, s);
  if (nvec <= 96) return launch_warp<kKind, T, kVec, 3>(x, g, b, y, rows, n, eps, s);
  if (nvec <= 128) return launch_warp<kKind, T, kVec, 4>(x, g, b, y, rows, n, eps, s);
  // A CTA per row: the fewest threads (>= 128) that hold the row in <= 4 vectors each.
  auto vpt = [&](int threads) { return static_cast<int>((nvec + threads - 1) / threads); };
  if (nvec <= 4 * 128) return launch_cta<kKind, T, kVec, 128>(vpt(128), x, g, b, y, rows, n, eps, s);
  if (nvec <= 4 * 256) return launch_cta<kKind, T, kVec, 256>(vpt(256), x, g, b, y, rows, n, eps, s);
  if (nvec <= 4 * 512) return launch_cta<kKind, T, kVec, 512>(vpt(512), x, g, b, y, rows, n, eps, s);
  if (nvec <= 4 * 1024) return launch_cta<kKind, T, kVec, 1024>(vpt(1024), x, g, b, y, rows, n, eps, s);
  *done = false;
  return cudaSuccess;
}

inline bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

template <int kKind, typename T>
cudaError_t launch(const T* x, const T* g, const T* b, T* y, int64_t rows, int64_t n, float eps,
                   cudaStream_t s) {
  if (rows <= 0 || n <= 0) return cudaSuccess;
  if (rows > 0x7fffffffLL) return cudaErrorInvalidValue;
  constexpr int kVec = 16 / sizeof(T);
  const bool vec_ok = n % kVec == 0 && aligned16(x) && aligned16(y) && aligned16(g) &&
                      (kKind == Kind::kRms || aligned16(b));
  bool done = false;
  cudaError_t rc = vec_ok ? launch_vec<kKind, T, kVec>(x, g, b, y, rows, n, eps, s, &done)
                          : launch_vec<kKind, T, 1>(x, g, b, y, rows, n, eps, s, &done);
  if (done) return rc;
  long_row_kernel<kKind, T, 1024><<<static_cast<unsigned>(rows), 1024, 0, s>>>(x, g, b, y, rows, n, eps);
  return cudaGetLastError();
}

}  // namespace norm
}  // namespace byocc

#define BYOCC_NORM_ENTRY_POINTS(tag, T)                                                      \
  extern "C" int byocc_layer_norm_##tag(const void* x, const void* gamma, const void* beta,  \
                                        void* y, int64_t rows, int64_t n, float eps,        \
                                        cudaStream_t stream) {                               \
    return static_cast<int>(byocc::norm::launch<byocc::norm::Kind::kLayer, T>(              \
        static_cast<const T*>(x), static_cast<const T*>(gamma), static_cast<const T*>(beta), \
        static_cast<T*>(y), rows, n, eps, stream));                                          \
  }                                                                                          \
  extern "C" int byocc_rms_norm_##tag(const void* x, const void* weight, void* y, int64_t rows, \
                                      int64_t n, float eps, cudaStream_t stream) {           \
    return static_cast<int>(byocc::norm::launch<byocc::norm::Kind::kRms, T>(                \
        static_cast<const T*>(x), static_cast<const T*>(weight), nullptr, static_cast<T*>(y), \
        rows, n, eps, stream));                                                              \
  }
