// byocc_cublaslt.h: the cuBLASLt helpers of a byocc-generated library (internal interface
// between the wrappers in src/funcs/ and src/cublaslt_runtime.cu).
//
// A wrapper maps its row-major problem D(M x N) = X(M x K) W(K x N) onto cuBLASLt's
// column-major one, D^T(N x M) = W^T X^T: A = the weight, B = X, m = N, n = M, k = K.
#ifndef BYOCC_CUBLASLT_H_
#define BYOCC_CUBLASLT_H_

#include <stdint.h>
#include <cuda_runtime_api.h>
#include <library_types.h>
#include <cublasLt.h>

namespace byocc {

// The workspace every cuBLASLt call may use (CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES).
constexpr uint64_t kCublasLtWorkspaceBytes = uint64_t(32) << 20;
// Highest rank cublaslt_permute takes.
constexpr int kCublasLtMaxRank = 8;

// One column-major cuBLASLt matmul: D(m x n) = epilogue(op_a(A) B + bias), C = D, beta = 0.
// A is (op_a == N ? m x k : k x m) with leading dim lda; B is k x n (ldb), D is m x n (ldd).
// Batch strides are in elements; 0 broadcasts an operand over the batch.
struct CublasLtMatmul {
  int device;
  cudaDataType_t ab_type;        // A and B
  cudaDataType_t d_type;         // C, D and the bias
  cublasComputeType_t compute;
  cudaDataType_t scale_type;     // alpha = 1, beta = 0 in this type
  cublasOperation_t op_a;        // op(B) is always CUBLAS_OP_N
  uint64_t m, n, k;
  int64_t lda, ldb, ldd;
  int64_t batch;                 // >= 1
  int64_t stride_a, stride_b, stride_d;
  cublasLtEpilogue_t epilogue;
  const void* a;
  const void* b;
  const void* bias;              // required iff the epilogue adds a bias; length m
  void* d;
  void* workspace;               // 256-byte aligned, workspace_bytes long
  uint64_t workspace_bytes;
};

// Runs one matmul on `stream` (on p.device). Returns a BYOCC_* code; on failure the message
// (with cuBLASLt's status name and text) is in byocc_last_error().
int cublaslt_matmul(const CublasLtMatmul& p, cudaStream_t stream);

// data[i] = x * Phi(x) = 0.5 x (1 + erf(x / sqrt(2))) for n elements of `type`
// (CUDA_R_16F, CUDA_R_16BF or CUDA_R_32F), fp32 arithmetic, in place.
int cublaslt_gelu_erf_inplace(int device, void* data, cudaDataType_t type, int64_t n,
                              cudaStream_t stream);

// out = permute_dims(in, axes): in is compact row-major of in_shape (ndim <= kCublasLtMaxRank),
// out is compact row-major of shape in_shape[axes[i]]; elements of elem_bytes (1, 2, 4 or 8).
int cublaslt_permute(int device, const void* in, void* out, int elem_bytes, int ndim,
                     const int64_t* in_shape, const int* axes, cudaStream_t stream);

// out[i] = value[0] for i < n (a one-element bias broadcast to the vector the epilogue reads);
// elements of elem_bytes (1, 2, 4 or 8).
int cublaslt_broadcast(int device, const void* value, void* out, int elem_bytes, int64_t n,
                       cudaStream_t stream);

}  // namespace byocc

#endif  // BYOCC_CUBLASLT_H_
