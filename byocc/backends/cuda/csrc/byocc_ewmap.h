// byocc_ewmap.h: the argument block of byocc's index-mapped elementwise kernels
// (docs/codegen.md#data-movement-and-several-outputs): elementwise composites with data-movement
// ops (permute_dims, reshape, concat, strided_slice, split, broadcast_to, expand_dims, squeeze,
// flatten) or several outputs. Each thread takes one element of the outputs' index space and
// computes, through the composite's ops, the source index of every input element it reads;
// the kernel writes all outputs of the composite.
#ifndef BYOCC_EWMAP_H_
#define BYOCC_EWMAP_H_

#include <stdint.h>

namespace byocc {
namespace generic {

constexpr int kMapMaxInputs = 16;
constexpr int kMapMaxOutputs = 8;
constexpr int kMapMaxDims = 16;

struct EwMapArgs {
  int64_t numel;                   // elements of the largest output (the loop's range)
  int64_t dims[kMapMaxDims];       // run-time values of the symbolic dims the kernel reads
  void* out[kMapMaxOutputs];       // the outputs, row-major compact
  const void* in[kMapMaxInputs];   // the inputs, row-major compact (each in its own shape)
};

}  // namespace generic
}  // namespace byocc

#endif  // BYOCC_EWMAP_H_
