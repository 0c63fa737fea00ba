// byocc_generic.cuh: byocc's generic light kernels (no CUTLASS): operands read through
// broadcast strides, the generic epilogue  D = post(bin(act(acc + bias), residual)),  the
// SIMT GEMM with that epilogue fused, and the elementwise kernels' argument block.
// Arithmetic: fp32 for 16-bit and fp32 outputs, double for fp64, int64 for integers.
#ifndef BYOCC_GENERIC_CUH_
#define BYOCC_GENERIC_CUH_

#include <stdint.h>
#include <math.h>
#include <type_traits>
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>

#include "byocc_gemm.h"
#include "byocc_internal.h"

namespace byocc {
namespace generic {

constexpr int kMaxRank = 8;
constexpr int kMaxInputs = 16;

// How an operand is read at output element i (row-major linear index).
enum OperandKind : int {
  kAbsent = 0,      // not used
  kContiguous = 1,  // same element count as the output: element i
  kScalar = 2,      // one element, broadcast everywhere
  kStrided = 3      // element sum_a coord_a(i) * stride[a]
};

struct Operand {
  const void* ptr;
  int kind;
  int64_t stride[kMaxRank];  // per output axis, in elements (0 = broadcast)
};

struct Epilogue {
  int rank;                  // output rank
  int64_t shape[kMaxRank];   // output shape
  int act;                   // 0 identity, 1 relu, 2 gelu (erf), 3 silu
  int bin;                   // 0 none, 1 add, 2 multiply (with residual)
  int post;                  // 0 identity, 1 relu
  Operand bias;              // added to the accumulator first (absent: none)
  Operand residual;
};

// ---------------------------------------------------------------- value conversions
// Num<T>::C is the arithmetic type of storage type T; load/store convert.
template <typename T> struct Num {
  using C = typename std::conditional<std::is_integral<T>::value && !std::is_same<T, bool>::value,
                                      int64_t, T>::type;
  static __host__ __device__ __forceinline__ C load(T v) { return static_cast<C>(v); }
  static __host__ __device__ __forceinline__ T store(C v) { return static_cast<T>(v); }
};
template <> struct Num<__half> {
  using C = float;
  static __host__ __device__ __forceinline__ float load(__half v) { return __half2float(v); }
  static __host__ __device__ __forceinline__ __half store(float v) { return __float2half_rn(v); }
};
template <> struct Num<__nv_bfloat16> {
  using C = float;
  static __host__ __device__ __forceinline__ float load(__nv_bfloat16 v) { return __bfloat162float(v); }
  static __host__ __device__ __forceinline__ __nv_bfloat16 store(float v) { return __float2bfloat16_rn(v); }
};
template <> struct Num<int8_t> {
  using C = int64_t;
  static __host__ __device__ __forceinline__ int64_t load(int8_t v) { return v; }
  // two's-complement wrap, as numpy's cast
  static __host__ __device__ __forceinline__ int8_t store(int64_t v) { return static_cast<int8_t>(static_cast<uint8_t>(static_cast<uint64_t>(v) & 0xffu)); }
};

// Accumulator type of a GEMM input: fp32 for floating point (fp64 for double), int32 for integers.
template <typename T> struct Acc {
  using type = typename std::conditional<std::is_integral<T>::value, int32_t,
               typename std::conditional<std::is_same<T, double>::value, double, float>::type>::type;
};
template <typename T> __host__ __device__ __forceinline__ typename Acc<T>::type to_acc(T v) {
  return static_cast<typename Acc<T>::type>(Num<T>::load(v));
}

// ---------------------------------------------------------------- indexing
__host__ __device__ __forceinline__ int64_t offset_of(const Operand& op, int64_t i, int rank,
                                             const int64_t* shape) {
  if (op.kind == kContiguous) return i;
  if (op.kind == kScalar) return 0;
  int64_t off = 0;
  int64_t rem = i;
  for (int a = rank - 1; a >= 0; --a) {
    const int64_t n = shape[a];
    const int64_t c = rem % n;
    rem /= n;
    off += c * op.stride[a];
  }
  return off;
}

// Host: `op` reads a row-major tensor of shape in_shape (rank in_rank) broadcast (numpy
// rules, right-aligned) to the output shape. A size-1 axis gets stride 0.
inline void broadcast_operand(Operand* op, const void* ptr, int out_rank, const int64_t* out_shape,
                              int in_rank, const int64_t* in_shape) {
  op->ptr = ptr;
  int64_t in_numel = 1, out_numel = 1;
  for (int a = 0; a < in_rank; ++a) in_numel *= in_shape[a];
  for (int a = 0; a < out_rank; ++a) out_numel *= out_shape[a];
  for (int a = 0; a < kMaxRank; ++a) op->stride[a] = 0;
  if (in_numel == out_numel) {
    op->kind = kContiguous;
    return;
  }
  if (in_numel == 1) {
    op->kind = kScalar;
    return;
  }
  op->kind = kStrided;
  int64_t stride = 1;
  for (int j = in_rank - 1; j >= 0; --j) {
    const int a = out_rank - in_rank + j;
    if (a >= 0) op->stride[a] = (in_shape[j] == 1) ? 0 : stride;
    stride *= in_shape[j];
  }
}

// Host: `op` reads permute_dims(x, axes) of a row-major x with shape in_shape (rank `rank`);
// the output (the permuted tensor) has axis a = x's axis axes[a].
inline void permute_operand(Operand* op, const void* ptr, int rank, const int64_t* in_shape,
                            const int* axes) {
  op->ptr = ptr;
  op->kind = kStrided;
  int64_t strides[kMaxRank];
  int64_t s = 1;
  for (int j = rank - 1; j >= 0; --j) {
    strides[j] = s;
    s *= in_shape[j];
  }
  for (int a = 0; a < kMaxRank; ++a) op->stride[a] = 0;
  for (int a = 0; a < rank; ++a) op->stride[a] = strides[axes[a]];
}

inline void contiguous_operand(Operand* op, const void* ptr) {
  op->ptr = ptr;
  op->kind = kContiguous;
  for (int a = 0; a < kMaxRank; ++a) op->stride[a] = 0;
}

inline void absent_operand(Operand* op) {
  op->ptr = nullptr;
  op->kind = kAbsent;
  for (int a = 0; a < kMaxRank; ++a) op->stride[a] = 0;
}

// ---------------------------------------------------------------- math
template <typename C> __host__ __device__ __forceinline__ C relu(C v) { return v < C(0) ? C(0) : v; }
__host__ __device__ __forceinline__ float erf_of(float v) { return erff(v); }
__host__ __device__ __forceinline__ double erf_of(double v) { return erf(v); }
__host__ __device__ __forceinline__ float tanh_of(float v) { return tanhf(v); }
__host__ __device__ __forceinline__ double tanh_of(double v) { return tanh(v); }

template <typename C> __host__ __device__ __forceinline__ C act_of(C v, int act) {
  if (act == 1) return relu(v);
  if constexpr (std::is_floating_point<C>::value) {
    if (act == 2) return C(0.5) * v * (C(1) + erf_of(v * C(0.70710678118654752440)));
    if (act == 3) return v * (C(0.5) * (tanh_of(C(0.5) * v) + C(1)));
  }
  return v;
}

// Epilogue of output element i with accumulator value acc (already in arithmetic type C).
template <typename TOut>
__host__ __device__ __forceinline__ void epilogue_store(typename Num<TOut>::C acc, int64_t i, const Epilogue& e,
                                               TOut* out) {
  using C = typename Num<TOut>::C;
  C v = acc;
  if (e.bias.kind != kAbsent) {
    v = v + Num<TOut>::load(static_cast<const TOut*>(e.bias.ptr)[offset_of(e.bias, i, e.rank, e.shape)]);
  }
  v = act_of(v, e.act);
  if (e.bin != 0) {
    const C r = Num<TOut>::load(static_cast<const TOut*>(e.residual.ptr)[offset_of(e.residual, i, e.rank, e.shape)]);
    v = (e.bin == 1) ? C(v + r) : C(v * r);
  }
  if (e.post == 1) v = relu(v);
  out[i] = Num<TOut>::store(v);
}

inline int grid_for(int64_t work, int threads, int sm_count) {
  int64_t blocks = (work + threads - 1) / threads;
  const int64_t cap = static_cast<int64_t>(sm_count > 0 ? sm_count : 1) * 32;
  if (blocks > cap) blocks = cap;
  if (blocks < 1) blocks = 1;
  return static_cast<int>(blocks);
}

// ---------------------------------------------------------------- epilogue / strided copy
template <typename TSrc, typename TOut>
__global__ void __launch_bounds__(256) epilogue_kernel(Operand src, Epilogue e, int64_t numel, TOut* out) {
  using C = typename Num<TOut>::C;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < numel; i += step) {
    const TSrc s = static_cast<const TSrc*>(src.ptr)[offset_of(src, i, e.rank, e.shape)];
    epilogue_store<TOut>(static_cast<C>(Num<TSrc>::load(s)), i, e, out);
  }
}

// out (row-major, e.shape) = epilogue(src read through its operand strides).
template <typename TSrc, typename TOut>
int launch_epilogue(const Operand& src, const Epilogue& e, void* out, int sm_count,
                    cudaStream_t stream) {
  int64_t numel = 1;
  for (int a = 0; a < e.rank; ++a) numel *= e.shape[a];
  if (numel == 0) return BYOCC_OK;
  epilogue_kernel<TSrc, TOut><<<grid_for(numel, 256, sm_count), 256, 0, stream>>>(
      src, e, numel, static_cast<TOut*>(out));
  return byocc::check_launch("byocc generic epilogue");
}

// ---------------------------------------------------------------- SIMT GEMM
// D[l] = epilogue(A[l] x B[l]); A row-major (lda), B element (k, n) at k*sbk + n*sbn
// (NN: sbk = ldb, sbn = 1; TN: sbk = 1, sbn = ldb). D is the output, element
// (l, m, n) at linear index l*batch_stride_d + m*ldd + n (the epilogue's index space).
constexpr int kBM = 64, kBN = 64, kBK = 16;

template <typename TA, typename TB, typename TOut>
__global__ void __launch_bounds__(256) gemm_kernel(GemmArgs g, int64_t sbk, int64_t sbn, Epilogue e) {
  using AccT = typename Acc<TA>::type;
  using C = typename Num<TOut>::C;
  __shared__ AccT As[kBK][kBM + 1];
  __shared__ AccT Bs[kBK][kBN + 1];
  const int tid = threadIdx.x;
  const int tx = tid % 16, ty = tid / 16;
  const int64_t tiles_m = (g.M + kBM - 1) / kBM, tiles_n = (g.N + kBN - 1) / kBN;
  const int64_t tiles = tiles_m * tiles_n * g.L;
  const TA* A = static_cast<const TA*>(g.A);
  const TB* B = static_cast<const TB*>(g.B);
  TOut* D = static_cast<TOut*>(g.D);
  for (int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
    const int64_t l = t / (tiles_m * tiles_n);
    const int64_t r = t % (tiles_m * tiles_n);
    const int64_t m0 = (r / tiles_n) * kBM, n0 = (r % tiles_n) * kBN;
    const TA* Al = A + l * g.batch_stride_a;
    const TB* Bl = B + l * g.batch_stride_b;
    AccT acc[4][4];
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
      for (int j = 0; j < 4; ++j) acc[i][j] = AccT(0);
    for (int64_t k0 = 0; k0 < g.K; k0 += kBK) {
      for (int idx = tid; idx < kBM * kBK; idx += 256) {
        const int rr = idx / kBK, cc = idx % kBK;
        const int64_t gm = m0 + rr, gk = k0 + cc;
        As[cc][rr] = (gm < g.M && gk < g.K) ? to_acc(Al[gm * g.lda + gk]) : AccT(0);
      }
      for (int idx = tid; idx < kBK * kBN; idx += 256) {
        const int rr = idx / kBN, cc = idx % kBN;
        const int64_t gk = k0 + rr, gn = n0 + cc;
        Bs[rr][cc] = (gk < g.K && gn < g.N) ? to_acc(Bl[gk * sbk + gn * sbn]) : AccT(0);
      }
      __syncthreads();
#pragma unroll
      for (int kk = 0; kk < kBK; ++kk) {
        AccT a[4], b[4];
#pragma unroll
        for (int i = 0; i < 4; ++i) a[i] = As[kk][ty + 16 * i];
#pragma unroll
        for (int j = 0; j < 4; ++j) b[j] = Bs[kk][tx + 16 * j];
#pragma unroll
        for (int i = 0; i < 4; ++i)
#pragma unroll
          for (int j = 0; j < 4; ++j) acc[i][j] += a[i] * b[j];
      }
      __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int64_t gm = m0 + ty + 16 * i;
      if (gm >= g.M) continue;
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const int64_t gn = n0 + tx + 16 * j;
        if (gn >= g.N) continue;
        epilogue_store<TOut>(static_cast<C>(acc[i][j]), l * g.batch_stride_d + gm * g.ldd + gn, e, D);
      }
    }
  }
}

template <typename TA, typename TB, typename TOut>
int launch_gemm(const GemmArgs& g, int64_t sbk, int64_t sbn, const Epilogue& e, cudaStream_t stream) {
  if (g.M == 0 || g.N == 0 || g.L == 0) return BYOCC_OK;
  const int64_t tiles = ((g.M + kBM - 1) / kBM) * ((g.N + kBN - 1) / kBN) * g.L;
  int64_t blocks = tiles;
  const int64_t cap = static_cast<int64_t>(g.sm_count > 0 ? g.sm_count : 1) * 16;
  if (blocks > cap) blocks = cap;
  gemm_kernel<TA, TB, TOut><<<static_cast<int>(blocks), 256, 0, stream>>>(g, sbk, sbn, e);
  return byocc::check_launch("byocc generic SIMT GEMM");
}

// ---------------------------------------------------------------- elementwise kernels
// Helpers of the generated elementwise kernels (byocc/backends/cuda/elementwise.py).
template <typename T> __host__ __device__ __forceinline__ int64_t ew_wrap(int64_t v) {
  return static_cast<int64_t>(Num<T>::store(v));
}
template <typename T, typename S> __host__ __device__ __forceinline__ typename Num<T>::C ew_cast(S v) {
  return Num<T>::load(Num<T>::store(static_cast<typename Num<T>::C>(v)));
}
template <typename T> __host__ __device__ __forceinline__ T ew_max(T a, T b) {
  if constexpr (std::is_floating_point<T>::value) { if (a != a) return a; if (b != b) return b; }
  return a > b ? a : b;
}
template <typename T> __host__ __device__ __forceinline__ T ew_min(T a, T b) {
  if constexpr (std::is_floating_point<T>::value) { if (a != a) return a; if (b != b) return b; }
  return a < b ? a : b;
}
template <typename T, typename L, typename H> __host__ __device__ __forceinline__ T ew_clip(T v, L lo, H hi) {
  return v < T(lo) ? T(lo) : (v > T(hi) ? T(hi) : v);
}
__host__ __device__ __forceinline__ int64_t ew_idiv(int64_t a, int64_t b) { return b == 0 ? 0 : a / b; }
__host__ __device__ __forceinline__ int64_t ew_imod(int64_t a, int64_t b) { return b == 0 ? 0 : a % b; }
__host__ __device__ __forceinline__ int64_t ew_ifloordiv(int64_t a, int64_t b) {
  if (b == 0) return 0;
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
__host__ __device__ __forceinline__ int64_t ew_ifloormod(int64_t a, int64_t b) {
  if (b == 0) return 0;
  int64_t r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
template <typename T> __host__ __device__ __forceinline__ T ew_floormod(T a, T b) {
  T r = fmod(a, b);
  return (r != T(0) && ((r < T(0)) != (b < T(0)))) ? r + b : r;
}
__host__ __device__ __forceinline__ int64_t ew_ipow(int64_t a, int64_t b) {
  if (b < 0) return (a == 1) ? 1 : ((a == -1) ? ((b & 1) ? -1 : 1) : 0);
  int64_t r = 1;
  while (b > 0) { if (b & 1) r *= a; a *= a; b >>= 1; }
  return r;
}
__host__ __device__ __forceinline__ int64_t ew_shl(int64_t a, int64_t b, int bits) {
  return (b < 0 || b >= bits) ? 0 : static_cast<int64_t>(static_cast<uint64_t>(a) << b);
}
__host__ __device__ __forceinline__ int64_t ew_shr(int64_t a, int64_t b, int bits) {
  return (b < 0 || b >= bits) ? (a < 0 ? -1 : 0) : (a >> b);
}
template <typename T> __host__ __device__ __forceinline__ T ew_logaddexp(T a, T b) {
  if (a == b) return a + T(0.69314718055994530942);
  const T m = a > b ? a : b;
  const T d = a > b ? b - a : a - b;
  return (d != d) ? a + b : m + log1p(exp(d));
}

// The argument block of one generated elementwise kernel (src/kernels/ew_<hash>.cu).
struct EwArgs {
  int rank;
  int64_t shape[kMaxRank];
  int64_t numel;
  void* out;
  Operand in[kMaxInputs];
};

}  // namespace generic
}  // namespace byocc

#endif  // BYOCC_GENERIC_CUH_
