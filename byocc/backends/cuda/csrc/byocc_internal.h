// byocc_internal.h: helpers shared by the generated wrappers (not part of the public ABI).
#ifndef BYOCC_INTERNAL_H_
#define BYOCC_INTERNAL_H_

#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime_api.h>

#include "byocc_abi.h"

namespace byocc {

// Formats a message into the thread-local error buffer and returns `code`.
int fail(int code, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
// Clears the error buffer (called on entry of every exported function).
void clear_error();

struct DeviceInfo {
  int major;
  int minor;
  int sm_count;
};
// Compute capability and SM count of `device`, queried once per device.
int device_info(int device, DeviceInfo* out);

// The device pointer of a tensor (data + byte_offset).
inline void* data_of(const DLTensor* t) {
  return static_cast<void*>(static_cast<char*>(t->data) + t->byte_offset);
}
inline bool aligned_to(const void* p, size_t bytes) {
  return (reinterpret_cast<uintptr_t>(p) % bytes) == 0;
}

// Checks argument `index` (named `name` in messages): CUDA device `device`, dtype
// (code, bits, lanes 1), rank and compact row-major strides.
int check_tensor(const DLTensor* t, int index, const char* name, int device, uint8_t code,
                 uint8_t bits, int ndim);
// Static dim: t->shape[axis] == expected.
int check_dim(const DLTensor* t, int index, const char* name, int axis, int64_t expected);
// Symbolic dim `sym`: the first sighting binds *value (initialised to -1), later ones must agree.
int bind_dim(const DLTensor* t, int index, const char* name, int axis, const char* sym,
             int64_t* value);
// The device pointer bound to constant `name` with byocc_set_constant, checked against
// dtype and element count; NULL (and the error set) when missing.
const void* constant(const char* name, uint8_t code, uint8_t bits, int64_t numel, int device);

// Rounds up to 256 bytes: every scratch sub-buffer starts aligned for TMA and vector loads.
inline uint64_t round_up(uint64_t bytes) { return (bytes + 255u) & ~uint64_t(255u); }

// Launch status of the last kernel (cudaGetLastError) as a byocc code.
int check_launch(const char* what);

}  // namespace byocc

#endif  // BYOCC_INTERNAL_H_
