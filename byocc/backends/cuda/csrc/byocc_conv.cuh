// byocc_conv.cuh: byocc's generic direct convolution (no CUTLASS): conv2d fprop of NHWC
// activations and KRSC (OHWI) filters, every group in one launch, with the generic epilogue
// D = post(bin(act(acc + bias), residual)) fused. One thread per output element; fp32
// accumulation for float inputs, int32 for 8-bit. Correct for every shape, stride, padding,
// dilation, group count and alignment; a correctness fallback, not fast.
#ifndef BYOCC_CONV_CUH_
#define BYOCC_CONV_CUH_

#include "byocc_conv.h"
#include "byocc_generic.cuh"

namespace byocc {
namespace generic {

// Output element i of the whole output (N, P, Q, K * groups), row-major, which is also the
// epilogue's index space; `a` is group 0's problem (C, K per group; lda = C * groups).
template <typename TA, typename TB, typename TOut>
__host__ __device__ __forceinline__ void conv_output(const ConvArgs& a, int64_t groups, const Epilogue& e, int64_t i) {
  using AccT = typename Acc<TA>::type;
  using C = typename Num<TOut>::C;
  const TA* x = static_cast<const TA*>(a.A);
  const int64_t channels = a.K * groups;
  const int64_t k = i % channels;
  int64_t t = i / channels;
  const int64_t q = t % a.Q;
  t /= a.Q;
  const int64_t p = t % a.P;
  const int64_t n = t / a.P;
  const int64_t g = k / a.K;
  const TB* wk = static_cast<const TB*>(a.B) + k * a.R * a.S * a.C;
  AccT acc = AccT(0);
  for (int64_t r = 0; r < a.R; ++r) {
    const int64_t h = p * a.stride_h - a.pad_h + r * a.dilation_h;
    if (h < 0 || h >= a.H) continue;
    for (int64_t s = 0; s < a.S; ++s) {
      const int64_t v = q * a.stride_w - a.pad_w + s * a.dilation_w;
      if (v < 0 || v >= a.W) continue;
      const TA* xp = x + ((n * a.H + h) * a.W + v) * a.lda + g * a.C;
      const TB* wp = wk + (r * a.S + s) * a.C;
      for (int64_t c = 0; c < a.C; ++c) acc += to_acc(xp[c]) * to_acc(wp[c]);
    }
  }
  epilogue_store<TOut>(static_cast<C>(acc), i, e, static_cast<TOut*>(a.D));
}

template <typename TA, typename TB, typename TOut>
__global__ void __launch_bounds__(256) conv_kernel(ConvArgs a, int64_t groups, Epilogue e, int64_t numel) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < numel; i += step) {
    conv_output<TA, TB, TOut>(a, groups, e, i);
  }
}

template <typename TA, typename TB, typename TOut>
int launch_conv(const ConvArgs& a, int64_t groups, const Epilogue& e, cudaStream_t stream) {
  const int64_t numel = a.N * a.P * a.Q * a.K * groups;
  if (numel == 0) return BYOCC_OK;
  conv_kernel<TA, TB, TOut><<<grid_for(numel, 256, a.sm_count), 256, 0, stream>>>(a, groups, e, numel);
  return byocc::check_launch("byocc generic direct convolution");
}

// Channel padding in scratch (the C < 8 stem of a CNN, so an aligned CUTLASS unit runs):
// dst is `rows` rows of kPad channels, src's c channels then zeros. One thread per row, one
// kPad-element store (16 bytes for f16 and kPad = 8).
template <typename T, int kPad>
struct alignas(sizeof(T) * kPad) PaddedRow {
  T v[kPad];
};

template <typename T, int kPad>
__global__ void __launch_bounds__(256) pad_channels_kernel(const T* src, int64_t rows, int64_t c, T* dst) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < rows; i += step) {
    PaddedRow<T, kPad> row{};
    for (int64_t k = 0; k < c; ++k) row.v[k] = src[i * c + k];
    reinterpret_cast<PaddedRow<T, kPad>*>(dst)[i] = row;
  }
}

template <typename T, int kPad>
int launch_pad_channels(const void* src, int64_t rows, int64_t c, void* dst, int sm_count, cudaStream_t stream) {
  if (c < 1 || c > kPad || reinterpret_cast<uintptr_t>(dst) % sizeof(PaddedRow<T, kPad>) != 0) {
    return byocc::fail(BYOCC_E_INTERNAL, "channel padding: %lld channels to %d, or a misaligned scratch region",
                       static_cast<long long>(c), kPad);
  }
  if (rows == 0) return BYOCC_OK;
  pad_channels_kernel<T, kPad><<<grid_for(rows, 256, sm_count), 256, 0, stream>>>(static_cast<const T*>(src), rows, c,
                                                                                 static_cast<T*>(dst));
  return byocc::check_launch("byocc channel padding");
}

// Space-to-depth in scratch (a strided stem with few channels, so that the sm_90a unit runs it
// as a stride-1, unpadded convolution over 16-byte channel rows):
//   dst[b, i, j, (a * s + t) * c + k] = src[b, s * i + a - pad_t, s * j + t - pad_l, k]
// for a, t < s and k < c; zero outside src and in the channels after s * s * c. dst has
// n x h2 x w2 rows of kPad channels. The filter takes the same map with no padding: its taps
// s * u + a at or past R read as zeros. One thread per row, one kPad-element store.
template <typename T, int kPad>
__host__ __device__ __forceinline__ void space_to_depth_row(const T* src, int64_t h, int64_t w, int64_t c, int s,
                                                            int64_t pad_t, int64_t pad_l, int64_t h2, int64_t w2,
                                                            int64_t r, T* dst) {
  const int64_t j = r % w2;
  const int64_t i = (r / w2) % h2;
  const int64_t b = r / (w2 * h2);
  PaddedRow<T, kPad> row{};
  for (int a = 0; a < s; ++a) {
    const int64_t y = s * i + a - pad_t;
    if (y < 0 || y >= h) continue;
    for (int t = 0; t < s; ++t) {
      const int64_t x = s * j + t - pad_l;
      if (x < 0 || x >= w) continue;
      const T* pixel = src + ((b * h + y) * w + x) * c;
      for (int64_t k = 0; k < c; ++k) row.v[(a * s + t) * c + k] = pixel[k];
    }
  }
  reinterpret_cast<PaddedRow<T, kPad>*>(dst)[r] = row;
}

template <typename T, int kPad>
__global__ void __launch_bounds__(256) space_to_depth_kernel(const T* src, int64_t n, int64_t h, int64_t w, int64_t c,
                                                             int s, int64_t pad_t, int64_t pad_l, int64_t h2, int64_t w2,
                                                             T* dst) {
  const int64_t rows = n * h2 * w2;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t r = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; r < rows; r += step) {
    space_to_depth_row<T, kPad>(src, h, w, c, s, pad_t, pad_l, h2, w2, r, dst);
  }
}

template <typename T, int kPad>
int launch_space_to_depth(const void* src, int64_t n, int64_t h, int64_t w, int64_t c, int64_t s, int64_t pad_t,
                          int64_t pad_l, int64_t h2, int64_t w2, void* dst, int sm_count, cudaStream_t stream) {
  if (s < 1 || c < 1 || s * s * c > kPad || pad_t < 0 || pad_l < 0 ||
      reinterpret_cast<uintptr_t>(dst) % sizeof(PaddedRow<T, kPad>) != 0) {
    return byocc::fail(BYOCC_E_INTERNAL,
                       "space-to-depth: %lld channels by %lld (%lld > %d channels), padding %lld/%lld, or a "
                       "misaligned scratch region",
                       static_cast<long long>(c), static_cast<long long>(s), static_cast<long long>(s * s * c), kPad,
                       static_cast<long long>(pad_t), static_cast<long long>(pad_l));
  }
  const int64_t rows = n * h2 * w2;
  if (rows == 0) return BYOCC_OK;
  space_to_depth_kernel<T, kPad><<<grid_for(rows, 256, sm_count), 256, 0, stream>>>(
      static_cast<const T*>(src), n, h, w, c, static_cast<int>(s), pad_t, pad_l, h2, w2, static_cast<T*>(dst));
  return byocc::check_launch("byocc space-to-depth");
}

}  // namespace generic
}  // namespace byocc

#endif  // BYOCC_CONV_CUH_
