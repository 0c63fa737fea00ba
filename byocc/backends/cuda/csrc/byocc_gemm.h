// byocc_gemm.h: the problem a generated GEMM kernel unit solves (internal interface
// between the wrappers in src/funcs/ and the kernel units in src/kernels/).
//
//   D[l] = post( bin( act( A[l] x B[l] + bias[l] ), C[l] ) )      (fp32 arithmetic)
//
// A is row-major M x K (lda >= K). B is K x N row-major (ldb >= N) for kernels built for
// "NN", or stored N x K (ldb >= K, K contiguous) for "TN". C (residual, or a full-shape
// bias) and D are row-major M x N (ldc, ldd). bias is a row vector of N elements. Batch
// strides are in elements; 0 broadcasts an operand over the batch. Which of bias / C / act /
// bin / post a kernel applies is fixed by its unit (its header comment says which).
#ifndef BYOCC_GEMM_H_
#define BYOCC_GEMM_H_

#include <stdint.h>
#include <cuda_runtime_api.h>

namespace byocc {

struct GemmArgs {
  int64_t M, N, K, L;
  const void* A; int64_t lda; int64_t batch_stride_a;
  const void* B; int64_t ldb; int64_t batch_stride_b;
  const void* bias; int64_t batch_stride_bias;
  const void* C; int64_t ldc; int64_t batch_stride_c;
  void* D; int64_t ldd; int64_t batch_stride_d;
  int device;
  int sm_count;
};

// Every kernel unit k_<hash>.cu defines these three, for its own <hash>:
//   bool     gemm_<hash>_can_implement(const GemmArgs& args);
//   uint64_t gemm_<hash>_workspace_bytes(const GemmArgs& args);
//   int      gemm_<hash>_run(const GemmArgs& args, void* workspace, uint64_t workspace_bytes,
//                           cudaStream_t stream);  // a BYOCC_* code; byocc::fail() on error

}  // namespace byocc

#endif  // BYOCC_GEMM_H_
