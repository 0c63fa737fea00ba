// cublaslt_runtime.cu: cuBLASLt handles, the descriptor/algorithm cache, and the small
// elementwise kernels of the cuBLAS wrappers (exact GELU, permute, bias broadcast). No CUTLASS.
#include <stdint.h>
#include <string.h>

#include <array>
#include <map>
#include <mutex>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "byocc_internal.h"
#include "byocc_cublaslt.h"

namespace byocc {
namespace {

constexpr int kMaxDevices = 64;
// Symbolic dims make one key per distinct shape; past this many entries per process the
// descriptors are created per call instead (correct, about 2 us slower).
constexpr size_t kMaxCacheEntries = 4096;

// Makes `device` current for the scope of one call and restores the caller's device.
class DeviceScope {
 public:
  DeviceScope() = default;
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;
  int enter(int device) {
    if (device < 0 || device >= kMaxDevices) {
      return fail(BYOCC_E_LAYOUT, "device id %d out of range", device);
    }
    cudaError_t st = cudaGetDevice(&previous_);
    if (st != cudaSuccess) return fail(BYOCC_E_CUDA, "cudaGetDevice: %s", cudaGetErrorString(st));
    if (previous_ != device) {
      st = cudaSetDevice(device);
      if (st != cudaSuccess) {
        return fail(BYOCC_E_CUDA, "cudaSetDevice(%d): %s", device, cudaGetErrorString(st));
      }
      switched_ = true;
    }
    return BYOCC_OK;
  }
  ~DeviceScope() {
    if (switched_) cudaSetDevice(previous_);
  }

 private:
  int previous_ = 0;
  bool switched_ = false;
};

int status_fail(const char* what, cublasStatus_t st, const CublasLtMatmul& p) {
  return fail(BYOCC_E_CUBLAS, "%s failed: %s (%s) [m=%llu n=%llu k=%llu batch=%lld op_a=%s]", what,
              cublasLtGetStatusName(st), cublasLtGetStatusString(st),
              static_cast<unsigned long long>(p.m), static_cast<unsigned long long>(p.n),
              static_cast<unsigned long long>(p.k), static_cast<long long>(p.batch),
              p.op_a == CUBLAS_OP_T ? "T" : "N");
}

// ---- handles: one per device, never destroyed (destroying them from a static destructor
// races with the CUDA runtime's own teardown at process exit).
std::mutex g_handle_mutex;
cublasLtHandle_t g_handles[kMaxDevices];

int handle_for(const CublasLtMatmul& p, cublasLtHandle_t* out) {
  std::lock_guard<std::mutex> lock(g_handle_mutex);
  if (g_handles[p.device] == nullptr) {
    cublasLtHandle_t h = nullptr;
    cublasStatus_t st = cublasLtCreate(&h);
    if (st != CUBLAS_STATUS_SUCCESS) return status_fail("cublasLtCreate", st, p);
    g_handles[p.device] = h;
  }
  *out = g_handles[p.device];
  return BYOCC_OK;
}

// ---- the cache
constexpr int kKeyFields = 24;
using Key = std::array<int64_t, kKeyFields>;

// The largest power of two (at most 256) dividing the address; what the heuristic must assume.
uint32_t alignment_of(const void* ptr) {
  uintptr_t v = reinterpret_cast<uintptr_t>(ptr);
  uint32_t a = 256;
  while (a > 1 && (v % a) != 0) a >>= 1;
  return a;
}

bool has_bias(cublasLtEpilogue_t e) {
  return (static_cast<uint32_t>(e) & static_cast<uint32_t>(CUBLASLT_EPILOGUE_BIAS)) != 0;
}

Key make_key(const CublasLtMatmul& p) {
  Key k{};
  int i = 0;
  k[i++] = p.device;
  k[i++] = static_cast<int64_t>(p.ab_type);
  k[i++] = static_cast<int64_t>(p.d_type);
  k[i++] = static_cast<int64_t>(p.compute);
  k[i++] = static_cast<int64_t>(p.scale_type);
  k[i++] = static_cast<int64_t>(p.op_a);
  k[i++] = static_cast<int64_t>(p.m);
  k[i++] = static_cast<int64_t>(p.n);
  k[i++] = static_cast<int64_t>(p.k);
  k[i++] = p.lda;
  k[i++] = p.ldb;
  k[i++] = p.ldd;
  k[i++] = p.batch;
  k[i++] = p.stride_a;
  k[i++] = p.stride_b;
  k[i++] = p.stride_d;
  k[i++] = static_cast<int64_t>(p.epilogue);
  k[i++] = has_bias(p.epilogue) ? static_cast<int64_t>(p.d_type) : -1;  // bias type
  k[i++] = alignment_of(p.a);
  k[i++] = alignment_of(p.b);
  k[i++] = alignment_of(p.d);
  k[i++] = has_bias(p.epilogue) ? alignment_of(p.bias) : 0;
  k[i++] = static_cast<int64_t>(p.workspace_bytes);
  k[i++] = 1;  // key layout version
  return k;
}

// Layouts, descriptor and algorithm of one problem. Immutable once built, so threads share a
// cached plan; a call with a bias builds its own descriptor (the bias pointer is part of it).
struct Plan {
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
  cublasLtMatmulDesc_t desc = nullptr;  // NULL when the epilogue takes a bias
  cublasLtMatmulAlgo_t algo;
  uint64_t workspace = 0;
};

void destroy(Plan* plan) {
  if (plan->desc) cublasLtMatmulDescDestroy(plan->desc);
  if (plan->a) cublasLtMatrixLayoutDestroy(plan->a);
  if (plan->b) cublasLtMatrixLayoutDestroy(plan->b);
  if (plan->d) cublasLtMatrixLayoutDestroy(plan->d);
  *plan = Plan{};
}

std::mutex g_cache_mutex;
std::map<Key, Plan>& cache() {
  static std::map<Key, Plan>* table = new std::map<Key, Plan>();  // never destroyed (see handles)
  return *table;
}

#define BYOCC_LT_CHECK(call, what)                      \
  do {                                                  \
    cublasStatus_t st_ = (call);                        \
    if (st_ != CUBLAS_STATUS_SUCCESS) return status_fail(what, st_, p); \
  } while (0)

int make_layout(const CublasLtMatmul& p, cudaDataType_t type, uint64_t rows, uint64_t cols,
                int64_t ld, int64_t stride, cublasLtMatrixLayout_t* out) {
  BYOCC_LT_CHECK(cublasLtMatrixLayoutCreate(out, type, rows, cols, ld), "cublasLtMatrixLayoutCreate");
  if (p.batch > 1) {
    int32_t count = static_cast<int32_t>(p.batch);
    BYOCC_LT_CHECK(cublasLtMatrixLayoutSetAttribute(*out, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count,
                                                    sizeof(count)),
                   "cublasLtMatrixLayoutSetAttribute(BATCH_COUNT)");
    BYOCC_LT_CHECK(cublasLtMatrixLayoutSetAttribute(*out, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                                    &stride, sizeof(stride)),
                   "cublasLtMatrixLayoutSetAttribute(STRIDED_BATCH_OFFSET)");
  }
  return BYOCC_OK;
}

int make_desc(const CublasLtMatmul& p, cublasLtMatmulDesc_t* out) {
  BYOCC_LT_CHECK(cublasLtMatmulDescCreate(out, p.compute, p.scale_type), "cublasLtMatmulDescCreate");
  cublasLtMatmulDesc_t desc = *out;
  cublasOperation_t op_a = p.op_a;
  cublasOperation_t op_b = CUBLAS_OP_N;
  BYOCC_LT_CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &op_a, sizeof(op_a)),
                 "cublasLtMatmulDescSetAttribute(TRANSA)");
  BYOCC_LT_CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &op_b, sizeof(op_b)),
                 "cublasLtMatmulDescSetAttribute(TRANSB)");
  cublasLtEpilogue_t epilogue = p.epilogue;
  BYOCC_LT_CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue,
                                                sizeof(epilogue)),
                 "cublasLtMatmulDescSetAttribute(EPILOGUE)");
  if (has_bias(p.epilogue)) {
    const void* bias = p.bias;
    BYOCC_LT_CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias,
                                                  sizeof(bias)),
                   "cublasLtMatmulDescSetAttribute(BIAS_POINTER)");
    // The bias has the output's dtype (also for f16/bf16 inputs with an f32 output).
    int32_t bias_type = static_cast<int32_t>(p.d_type);
    BYOCC_LT_CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type,
                                                  sizeof(bias_type)),
                   "cublasLtMatmulDescSetAttribute(BIAS_DATA_TYPE)");
    // One bias vector for every matrix of the batch.
    int64_t bias_stride = 0;
    BYOCC_LT_CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE,
                                                  &bias_stride, sizeof(bias_stride)),
                   "cublasLtMatmulDescSetAttribute(BIAS_BATCH_STRIDE)");
  }
  return BYOCC_OK;
}

// Builds the plan of `p` (layouts, a descriptor, the heuristic's first algorithm).
int build_plan(cublasLtHandle_t handle, const CublasLtMatmul& p, Plan* plan) {
  const bool a_n = p.op_a == CUBLAS_OP_N;
  int rc = make_layout(p, p.ab_type, a_n ? p.m : p.k, a_n ? p.k : p.m, p.lda, p.stride_a, &plan->a);
  if (rc == BYOCC_OK) rc = make_layout(p, p.ab_type, p.k, p.n, p.ldb, p.stride_b, &plan->b);
  if (rc == BYOCC_OK) rc = make_layout(p, p.d_type, p.m, p.n, p.ldd, p.stride_d, &plan->d);
  cublasLtMatmulDesc_t desc = nullptr;
  if (rc == BYOCC_OK) rc = make_desc(p, &desc);
  if (rc != BYOCC_OK) {
    if (desc) cublasLtMatmulDescDestroy(desc);
    destroy(plan);
    return rc;
  }
  cublasLtMatmulPreference_t pref = nullptr;
  cublasLtMatmulHeuristicResult_t result;
  memset(&result, 0, sizeof(result));
  int found = 0;
  cublasStatus_t st = cublasLtMatmulPreferenceCreate(&pref);
  const char* what = "cublasLtMatmulPreferenceCreate";
  if (st == CUBLAS_STATUS_SUCCESS) {
    uint64_t ws = p.workspace_bytes;
    st = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws));
    what = "cublasLtMatmulPreferenceSetAttribute(MAX_WORKSPACE_BYTES)";
  }
  // The default assumes 256-byte aligned operands; tell the heuristic what these pointers give.
  const cublasLtMatmulPreferenceAttributes_t align_attr[4] = {
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
  const uint32_t align_val[4] = {alignment_of(p.a), alignment_of(p.b), alignment_of(p.d), alignment_of(p.d)};
  for (int i = 0; i < 4 && st == CUBLAS_STATUS_SUCCESS; ++i) {
    st = cublasLtMatmulPreferenceSetAttribute(pref, align_attr[i], &align_val[i], sizeof(uint32_t));
    what = "cublasLtMatmulPreferenceSetAttribute(MIN_ALIGNMENT)";
  }
  if (st == CUBLAS_STATUS_SUCCESS) {
    st = cublasLtMatmulAlgoGetHeuristic(handle, desc, plan->a, plan->b, plan->d, plan->d, pref, 1,
                                        &result, &found);
    what = "cublasLtMatmulAlgoGetHeuristic";
  }
  if (pref) cublasLtMatmulPreferenceDestroy(pref);
  if (st != CUBLAS_STATUS_SUCCESS) {
    cublasLtMatmulDescDestroy(desc);
    destroy(plan);
    return status_fail(what, st, p);
  }
  if (found == 0 || result.state != CUBLAS_STATUS_SUCCESS) {
    cublasLtMatmulDescDestroy(desc);
    destroy(plan);
    return fail(BYOCC_E_CUBLAS,
                "cuBLASLt has no algorithm for this problem (cublasLtMatmulAlgoGetHeuristic returned "
                "no result) [m=%llu n=%llu k=%llu batch=%lld op_a=%s lda=%lld ldb=%lld ldd=%lld "
                "epilogue=%d workspace=%llu bytes, alignments A/B/D %u/%u/%u]",
                static_cast<unsigned long long>(p.m), static_cast<unsigned long long>(p.n),
                static_cast<unsigned long long>(p.k), static_cast<long long>(p.batch),
                p.op_a == CUBLAS_OP_T ? "T" : "N", static_cast<long long>(p.lda),
                static_cast<long long>(p.ldb), static_cast<long long>(p.ldd),
                static_cast<int>(p.epilogue), static_cast<unsigned long long>(p.workspace_bytes),
                align_val[0], align_val[1], align_val[2]);
  }
  plan->algo = result.algo;
  plan->workspace = result.workspaceSize;
  if (has_bias(p.epilogue)) {
    cublasLtMatmulDescDestroy(desc);  // rebuilt per call with that call's bias pointer
  } else {
    plan->desc = desc;
  }
  return BYOCC_OK;
}

// ---- kernels
template <typename T>
__device__ __forceinline__ float to_float(T v);
template <>
__device__ __forceinline__ float to_float<float>(float v) { return v; }
template <>
__device__ __forceinline__ float to_float<__half>(__half v) { return __half2float(v); }
template <>
__device__ __forceinline__ float to_float<__nv_bfloat16>(__nv_bfloat16 v) { return __bfloat162float(v); }

template <typename T>
__device__ __forceinline__ T from_float(float v);
template <>
__device__ __forceinline__ float from_float<float>(float v) { return v; }
template <>
__device__ __forceinline__ __half from_float<__half>(float v) { return __float2half_rn(v); }
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }

template <typename T>
__global__ void gelu_erf_kernel(T* data, int64_t n) {
  const int64_t step = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    const float x = to_float<T>(data[i]);
    data[i] = from_float<T>(0.5f * x * (1.0f + erff(x * 0.70710678118654752440f)));
  }
}

struct PermuteParams {
  int ndim;
  int64_t numel;
  int64_t out_shape[kCublasLtMaxRank];
  int64_t in_stride[kCublasLtMaxRank];  // input stride (elements) of output axis i
};

template <typename T>
__global__ void permute_kernel(const T* __restrict__ in, T* __restrict__ out, PermuteParams p) {
  const int64_t step = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < p.numel; i += step) {
    int64_t rest = i;
    int64_t src = 0;
    for (int axis = p.ndim - 1; axis >= 0; --axis) {
      const int64_t c = rest % p.out_shape[axis];
      rest /= p.out_shape[axis];
      src += c * p.in_stride[axis];
    }
    out[i] = in[src];
  }
}

template <typename T>
__global__ void broadcast_kernel(const T* __restrict__ value, T* __restrict__ out, int64_t n) {
  const int64_t step = static_cast<int64_t>(blockDim.x) * gridDim.x;
  const T v = *value;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    out[i] = v;
  }
}

unsigned int grid_for(int64_t n, int threads) {
  int64_t blocks = (n + threads - 1) / threads;
  if (blocks > 65535) blocks = 65535;  // grid-stride loops cover the rest
  return static_cast<unsigned int>(blocks < 1 ? 1 : blocks);
}

// Calls f(T{}) with T the unsigned integer type of `elem_bytes` bytes (1, 2, 4 or 8): the
// byte-moving kernels only copy elements, so one instantiation per width serves every dtype.
// Returns false (f not called) for any other width.
template <typename F>
bool with_word_type(int elem_bytes, F&& f) {
  switch (elem_bytes) {
    case 1: f(uint8_t{}); return true;
    case 2: f(uint16_t{}); return true;
    case 4: f(uint32_t{}); return true;
    case 8: f(uint64_t{}); return true;
    default: return false;
  }
}

}  // namespace

int cublaslt_matmul(const CublasLtMatmul& p, cudaStream_t stream) {
  if (p.batch < 1 || p.batch > INT32_MAX) {
    return fail(BYOCC_E_UNSUPPORTED, "cuBLASLt batch count %lld out of range", static_cast<long long>(p.batch));
  }
  if (has_bias(p.epilogue) && p.bias == nullptr) {
    return fail(BYOCC_E_INTERNAL, "cuBLASLt bias epilogue without a bias pointer");
  }
  if (p.workspace_bytes > 0 && (p.workspace == nullptr || !aligned_to(p.workspace, 256))) {
    return fail(BYOCC_E_SCRATCH, "cuBLASLt workspace must be 256-byte aligned");
  }
  DeviceScope scope;
  int rc = scope.enter(p.device);
  if (rc != BYOCC_OK) return rc;
  cublasLtHandle_t handle = nullptr;
  rc = handle_for(p, &handle);
  if (rc != BYOCC_OK) return rc;

  const Key key = make_key(p);
  Plan plan;
  bool cached = false;
  {
    std::lock_guard<std::mutex> lock(g_cache_mutex);
    auto it = cache().find(key);
    if (it != cache().end()) {
      plan = it->second;
      cached = true;
    }
  }
  if (!cached) {
    rc = build_plan(handle, p, &plan);
    if (rc != BYOCC_OK) return rc;
    std::lock_guard<std::mutex> lock(g_cache_mutex);
    if (cache().size() < kMaxCacheEntries) {
      auto inserted = cache().emplace(key, plan);
      if (!inserted.second) {  // another thread was first: use its plan, drop ours
        destroy(&plan);
        plan = inserted.first->second;
      }
      cached = true;
    }
  }
  cublasLtMatmulDesc_t desc = plan.desc;
  cublasLtMatmulDesc_t own_desc = nullptr;
  if (desc == nullptr) {
    rc = make_desc(p, &own_desc);
    if (rc != BYOCC_OK) {
      if (own_desc) cublasLtMatmulDescDestroy(own_desc);
      if (!cached) destroy(&plan);
      return rc;
    }
    desc = own_desc;
  }
  const float one_f = 1.0f, zero_f = 0.0f;
  const int32_t one_i = 1, zero_i = 0;
  const bool int_scale = p.scale_type == CUDA_R_32I;
  const void* alpha = int_scale ? static_cast<const void*>(&one_i) : static_cast<const void*>(&one_f);
  const void* beta = int_scale ? static_cast<const void*>(&zero_i) : static_cast<const void*>(&zero_f);
  cublasStatus_t st = cublasLtMatmul(handle, desc, alpha, p.a, plan.a, p.b, plan.b, beta, p.d, plan.d,
                                     p.d, plan.d, &plan.algo, p.workspace, p.workspace_bytes, stream);
  if (own_desc) cublasLtMatmulDescDestroy(own_desc);
  if (!cached) destroy(&plan);
  if (st != CUBLAS_STATUS_SUCCESS) return status_fail("cublasLtMatmul", st, p);
  return BYOCC_OK;
}

int cublaslt_gelu_erf_inplace(int device, void* data, cudaDataType_t type, int64_t n,
                              cudaStream_t stream) {
  if (n <= 0) return BYOCC_OK;
  DeviceScope scope;
  int rc = scope.enter(device);
  if (rc != BYOCC_OK) return rc;
  const int threads = 256;
  const unsigned int blocks = grid_for(n, threads);
  switch (type) {
    case CUDA_R_16F:
      gelu_erf_kernel<__half><<<blocks, threads, 0, stream>>>(static_cast<__half*>(data), n);
      break;
    case CUDA_R_16BF:
      gelu_erf_kernel<__nv_bfloat16><<<blocks, threads, 0, stream>>>(static_cast<__nv_bfloat16*>(data), n);
      break;
    case CUDA_R_32F:
      gelu_erf_kernel<float><<<blocks, threads, 0, stream>>>(static_cast<float*>(data), n);
      break;
    default:
      return fail(BYOCC_E_INTERNAL, "erf-GELU kernel: unsupported data type %d", static_cast<int>(type));
  }
  return check_launch("erf-GELU kernel");
}

int cublaslt_permute(int device, const void* in, void* out, int elem_bytes, int ndim,
                     const int64_t* in_shape, const int* axes, cudaStream_t stream) {
  if (ndim < 1 || ndim > kCublasLtMaxRank) {
    return fail(BYOCC_E_INTERNAL, "permute: rank %d not in [1, %d]", ndim, kCublasLtMaxRank);
  }
  int64_t in_stride[kCublasLtMaxRank];
  int64_t numel = 1;
  for (int i = ndim - 1; i >= 0; --i) {
    in_stride[i] = numel;
    numel *= in_shape[i];
  }
  PermuteParams params;
  memset(&params, 0, sizeof(params));
  params.ndim = ndim;
  params.numel = numel;
  bool seen[kCublasLtMaxRank] = {false};
  for (int i = 0; i < ndim; ++i) {
    if (axes[i] < 0 || axes[i] >= ndim || seen[axes[i]]) {
      return fail(BYOCC_E_INTERNAL, "permute: axes are not a permutation");
    }
    seen[axes[i]] = true;
    params.out_shape[i] = in_shape[axes[i]];
    params.in_stride[i] = in_stride[axes[i]];
  }
  if (numel == 0) return BYOCC_OK;
  DeviceScope scope;
  int rc = scope.enter(device);
  if (rc != BYOCC_OK) return rc;
  const int threads = 256;
  const unsigned int blocks = grid_for(numel, threads);
  const bool launched = with_word_type(elem_bytes, [&](auto word) {
    using T = decltype(word);
    permute_kernel<T><<<blocks, threads, 0, stream>>>(static_cast<const T*>(in), static_cast<T*>(out),
                                                      params);
  });
  if (!launched) return fail(BYOCC_E_INTERNAL, "permute: element size %d", elem_bytes);
  return check_launch("permute kernel");
}

int cublaslt_broadcast(int device, const void* value, void* out, int elem_bytes, int64_t n,
                       cudaStream_t stream) {
  if (n <= 0) return BYOCC_OK;
  DeviceScope scope;
  int rc = scope.enter(device);
  if (rc != BYOCC_OK) return rc;
  const int threads = 256;
  const unsigned int blocks = grid_for(n, threads);
  const bool launched = with_word_type(elem_bytes, [&](auto word) {
    using T = decltype(word);
    broadcast_kernel<T><<<blocks, threads, 0, stream>>>(static_cast<const T*>(value), static_cast<T*>(out), n);
  });
  if (!launched) return fail(BYOCC_E_INTERNAL, "broadcast: element size %d", elem_bytes);
  return check_launch("bias broadcast kernel");
}

}  // namespace byocc
