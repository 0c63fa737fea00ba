// byocc_attention.h: the argument block of byocc's fused attention kernel (fixed code, shipped
// with byocc). Included by the wrappers (no kernel code here) and by byocc_attention.cuh.
//
//   out[b, i, n, :] = softmax_j(q[b, i, n, :] . k[b, j, n', :] * scale + bias[b, n, i, j], masked)
//                     . v[b, j, n', :]                      with n' = n / (heads / kv_heads)
//
// Every tensor is addressed through run-time strides in elements (the last dim, H or Hv, is
// contiguous), so BSNH tensors, q/k/v cut out of one stacked qkv tensor, and grouped-query
// key/value heads are the same kernel. A bias stride of 0 broadcasts that dim.
#pragma once

#include <stdint.h>

namespace byocc {
namespace attention {

// Causal masks: TopLeft masks j > i; BottomRight masks j > i + (seq_kv - seq_q).
enum Mask : int32_t { kNoMask = 0, kTopLeft = 1, kBottomRight = 2 };

// What the sm_90a fused kernel's entry (byocc_attention_sm90.cuh) returns when it does not
// apply to the call (nothing launched): the wrapper then runs the SIMT kernel.
constexpr int kNotApplicable = -1;

struct Params {
  const void* q;
  const void* k;
  const void* v;
  const void* bias;  // nullptr: no bias
  void* out;
  int64_t batch, seq_q, seq_kv, heads, kv_heads, head_dim, head_dim_v;
  int64_t q_stride[3];     // batch, seq, head
  int64_t k_stride[3];
  int64_t v_stride[3];
  int64_t out_stride[3];
  int64_t bias_stride[4];  // batch, head, seq_q, seq_kv (0: broadcast)
  float scale;             // multiplies q . k (any sign or magnitude)
  int32_t mask;            // Mask
  int64_t window;          // > 0: also masks j < i + offset - (window - 1) (offset as the mask's)
};

}  // namespace attention
}  // namespace byocc
