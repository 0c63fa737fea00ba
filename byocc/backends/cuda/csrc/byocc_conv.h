// byocc_conv.h: the problem a generated conv2d kernel unit solves (internal interface
// between the wrappers in src/funcs/ and the conv units in src/kernels/).
//
//   D = post( bin( act( conv2d(A, B) + bias ), source ) )      (fp32 arithmetic)
//
// Fprop cross-correlation of one group: A is the activation NHWC (N, H, W, C), B the filter
// KRSC (K, R, S, C) packed, D the output NPQK (N, P, Q, K); C and K are the group's channel
// counts. A, source (CUTLASS's C operand: a residual or a full-shape addend) and D may be
// channel slices of wider NHWC tensors: lda, lds, ldd are their channel strides (the full
// tensors' channel counts; lds = 0: source is one row of K, broadcast). bias is a row vector
// of K elements. The implicit GEMM is M = N*P*Q, N = K, K = R*S*C.
// Which of bias / source / act / bin / post a kernel applies is fixed by its unit.
#ifndef BYOCC_CONV_H_
#define BYOCC_CONV_H_

#include <stdint.h>
#include <cuda_runtime_api.h>

namespace byocc {

struct ConvArgs {
  int64_t N, H, W, C, K, R, S, P, Q;
  int64_t pad_h, pad_w, stride_h, stride_w, dilation_h, dilation_w;
  const void* A; int64_t lda;
  const void* B;
  const void* bias;
  const void* source; int64_t lds;
  void* D; int64_t ldd;
  int device;
  int sm_count;
};

// The arguments of group g of a grouped convolution whose per-group problem is `a` (group 0):
// A, source, D and bias move to the group's channel slice, B to its (K, R, S, C) filter block.
inline ConvArgs conv_group(const ConvArgs& a, int64_t g, int64_t a_bytes, int64_t b_bytes,
                           int64_t d_bytes) {
  ConvArgs r = a;
  r.A = static_cast<const char*>(a.A) + g * a.C * a_bytes;
  r.B = static_cast<const char*>(a.B) + g * a.K * a.R * a.S * a.C * b_bytes;
  r.D = static_cast<char*>(a.D) + g * a.K * d_bytes;
  if (a.bias != nullptr) r.bias = static_cast<const char*>(a.bias) + g * a.K * d_bytes;
  if (a.source != nullptr) r.source = static_cast<const char*>(a.source) + g * a.K * d_bytes;
  return r;
}

// Every conv unit conv_<hash>.cu defines these three, for its own <hash>:
//   bool     conv_<hash>_can_implement(const ConvArgs& args);
//   uint64_t conv_<hash>_workspace_bytes(const ConvArgs& args);
//   int      conv_<hash>_run(const ConvArgs& args, void* workspace, uint64_t workspace_bytes,
//                           cudaStream_t stream);  // a BYOCC_* code; byocc::fail() on error

}  // namespace byocc

#endif  // BYOCC_CONV_H_
