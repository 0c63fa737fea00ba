"""The C++ every generated library shares (spec/backends.md sections 6.1-6.5).

* ``src/byocc_abi.h``: the public header: DLPack-layout structs (an already included
  ``dlpack.h`` wins), return codes, the library-wide functions;
* ``src/byocc_internal.h``: helpers for the generated wrappers: ``byocc::fail`` (message into
  the thread-local error buffer, returns the code), argument checks, the per-device cache
  (compute capability, SM count), bound constants;
* ``src/runtime.cu``: their definitions.

The text is fixed (no model-derived content), so every output folder gets the same bytes.
"""

from __future__ import annotations

from byocc.backends.codegen import ABI_VERSION
from byocc.backends.codegen import SourceFile

ABI_HEADER = r"""// byocc_abi.h: the C ABI of a byocc-generated library (ABI version %(abi)d).
//
// Every offloaded function is exported as
//   int32_t <global_symbol>(const DLTensor* const* args, int32_t num_args,
//                           void* scratch, uint64_t scratch_bytes, cudaStream_t stream);
//   uint64_t byocc_scratch_bytes_<global_symbol>(const DLTensor* const* args, int32_t num_args);
// args: the function's parameters in printed order, then its output(s) (destination passing).
// All work is enqueued on `stream`; nothing synchronises, allocates, prints or aborts.
// A non-zero return is one of the codes below; byocc_last_error() then says why.
#ifndef BYOCC_ABI_H_
#define BYOCC_ABI_H_

#include <stdint.h>
#include <cuda_runtime_api.h>

#ifndef DLPACK_VERSION
// Layout-identical to DLPack's DLDevice, DLDataType and DLTensor.
typedef enum { kDLCPU = 1, kDLCUDA = 2, kDLCUDAHost = 3, kDLCUDAManaged = 13 } DLDeviceType;
typedef struct { DLDeviceType device_type; int32_t device_id; } DLDevice;
typedef enum { kDLInt = 0, kDLUInt = 1, kDLFloat = 2, kDLBfloat = 4 } DLDataTypeCode;
typedef struct { uint8_t code; uint8_t bits; uint16_t lanes; } DLDataType;
typedef struct {
  void* data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t* shape;
  int64_t* strides;  // NULL: compact row-major
  uint64_t byte_offset;
} DLTensor;
#endif

#define BYOCC_EXPORT extern "C" __attribute__((visibility("default")))

enum {
  BYOCC_OK = 0,
  BYOCC_E_NARGS = 1,        // wrong num_args
  BYOCC_E_DTYPE = 2,        // dtype code, bits or lanes differ
  BYOCC_E_SHAPE = 3,        // rank, static dim, or symbolic-dim consistency
  BYOCC_E_LAYOUT = 4,       // non-compact strides, wrong device, misaligned for every variant
  BYOCC_E_SCRATCH = 5,      // scratch null or too small
  BYOCC_E_ARCH = 6,         // no kernel for this compute capability
  BYOCC_E_UNSUPPORTED = 7,  // can_implement refused and no fallback exists
  BYOCC_E_CUTLASS = 8,      // CUTLASS initialize/run failed
  BYOCC_E_CUDA = 9,         // CUDA error after a launch
  BYOCC_E_CUBLAS = 10,      // cuBLASLt status, or no heuristic result
  BYOCC_E_INTERNAL = 11,
  BYOCC_E_CONSTANT = 12     // a bound constant is missing or has the wrong type
};

BYOCC_EXPORT int32_t byocc_abi_version(void);
// Thread-local; valid until the next call into the library on this thread.
BYOCC_EXPORT const char* byocc_last_error(void);
// Bind the device tensor holding constant `name` (see the manifest's "constants"); the
// library keeps the pointer, the caller keeps the memory alive.
BYOCC_EXPORT int32_t byocc_set_constant(const char* name, const DLTensor* value);

#endif  // BYOCC_ABI_H_
""".replace("%(abi)d", str(ABI_VERSION))

INTERNAL_HEADER = r"""// byocc_internal.h: helpers shared by the generated wrappers (not part of the public ABI).
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
"""

RUNTIME_SOURCE = r"""// runtime.cu: library-wide state of a byocc-generated library: the error buffer, the
// per-device cache and the bound constants. Contains no kernels.
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <map>
#include <mutex>
#include <string>

#include "byocc_internal.h"

namespace byocc {
namespace {

thread_local char g_error[1024];

struct ConstantSlot {
  const void* data;
  DLDataType dtype;
  int64_t numel;
  int device;
};

std::mutex g_constants_mutex;
std::map<std::string, ConstantSlot>& constants_table() {
  static std::map<std::string, ConstantSlot> table;
  return table;
}

constexpr int kMaxDevices = 64;
std::once_flag g_device_once[kMaxDevices];
DeviceInfo g_device_info[kMaxDevices];
cudaError_t g_device_status[kMaxDevices];

}  // namespace

int fail(int code, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(g_error, sizeof(g_error), fmt, ap);
  va_end(ap);
  return code;
}

void clear_error() { g_error[0] = '\0'; }

int device_info(int device, DeviceInfo* out) {
  if (device < 0 || device >= kMaxDevices) {
    return fail(BYOCC_E_LAYOUT, "device id %d out of range", device);
  }
  std::call_once(g_device_once[device], [device]() {
    DeviceInfo info{0, 0, 0};
    cudaError_t st = cudaDeviceGetAttribute(&info.major, cudaDevAttrComputeCapabilityMajor, device);
    if (st == cudaSuccess) {
      st = cudaDeviceGetAttribute(&info.minor, cudaDevAttrComputeCapabilityMinor, device);
    }
    if (st == cudaSuccess) {
      st = cudaDeviceGetAttribute(&info.sm_count, cudaDevAttrMultiProcessorCount, device);
    }
    g_device_info[device] = info;
    g_device_status[device] = st;
  });
  if (g_device_status[device] != cudaSuccess) {
    return fail(BYOCC_E_CUDA, "querying device %d: %s", device,
                cudaGetErrorString(g_device_status[device]));
  }
  *out = g_device_info[device];
  return BYOCC_OK;
}

int check_tensor(const DLTensor* t, int index, const char* name, int device, uint8_t code,
                 uint8_t bits, int ndim) {
  if (t == nullptr) return fail(BYOCC_E_NARGS, "argument %d (%s) is NULL", index, name);
  if (t->device.device_type != kDLCUDA) {
    return fail(BYOCC_E_LAYOUT, "argument %d (%s) is not a CUDA tensor (device type %d)", index,
                name, static_cast<int>(t->device.device_type));
  }
  if (t->device.device_id != device) {
    return fail(BYOCC_E_LAYOUT, "argument %d (%s) is on device %d, argument 0 on device %d",
                index, name, t->device.device_id, device);
  }
  if (t->dtype.code != code || t->dtype.bits != bits || t->dtype.lanes != 1) {
    return fail(BYOCC_E_DTYPE,
                "argument %d (%s) has dtype (code %d, bits %d, lanes %d), expected (code %d, bits %d, lanes 1)",
                index, name, t->dtype.code, t->dtype.bits, t->dtype.lanes, code, bits);
  }
  if (t->ndim != ndim) {
    return fail(BYOCC_E_SHAPE, "argument %d (%s) has rank %d, expected %d", index, name, t->ndim,
                ndim);
  }
  if (t->data == nullptr) {
    bool empty = false;
    for (int i = 0; i < ndim; ++i) empty = empty || t->shape[i] == 0;
    if (!empty) return fail(BYOCC_E_LAYOUT, "argument %d (%s) has a NULL data pointer", index, name);
  }
  if (t->strides != nullptr) {
    int64_t expected = 1;
    for (int i = ndim - 1; i >= 0; --i) {
      if (t->shape[i] != 1 && t->strides[i] != expected) {
        return fail(BYOCC_E_LAYOUT,
                    "argument %d (%s) is not compact row-major (axis %d has stride %lld, expected %lld)",
                    index, name, i, static_cast<long long>(t->strides[i]),
                    static_cast<long long>(expected));
      }
      expected *= t->shape[i];
    }
  }
  if (!aligned_to(data_of(t), (bits + 7) / 8)) {
    return fail(BYOCC_E_LAYOUT, "argument %d (%s) is not aligned to its element size", index, name);
  }
  return BYOCC_OK;
}

int check_dim(const DLTensor* t, int index, const char* name, int axis, int64_t expected) {
  if (t->shape[axis] != expected) {
    return fail(BYOCC_E_SHAPE, "argument %d (%s) has dim %d = %lld, expected %lld", index, name,
                axis, static_cast<long long>(t->shape[axis]), static_cast<long long>(expected));
  }
  return BYOCC_OK;
}

int bind_dim(const DLTensor* t, int index, const char* name, int axis, const char* sym,
             int64_t* value) {
  int64_t v = t->shape[axis];
  if (v < 0) {
    return fail(BYOCC_E_SHAPE, "argument %d (%s) has negative dim %d", index, name, axis);
  }
  if (*value < 0) {
    *value = v;
    return BYOCC_OK;
  }
  if (*value != v) {
    return fail(BYOCC_E_SHAPE, "argument %d (%s) dim %d = %lld, but %s = %lld elsewhere", index,
                name, axis, static_cast<long long>(v), sym, static_cast<long long>(*value));
  }
  return BYOCC_OK;
}

const void* constant(const char* name, uint8_t code, uint8_t bits, int64_t numel, int device) {
  std::lock_guard<std::mutex> lock(g_constants_mutex);
  auto it = constants_table().find(name);
  if (it == constants_table().end()) {
    fail(BYOCC_E_CONSTANT, "constant %s is not bound (call byocc_set_constant first)", name);
    return nullptr;
  }
  const ConstantSlot& c = it->second;
  if (c.dtype.code != code || c.dtype.bits != bits || c.numel != numel || c.device != device) {
    fail(BYOCC_E_CONSTANT, "constant %s is bound with another dtype, size or device", name);
    return nullptr;
  }
  return c.data;
}

int check_launch(const char* what) {
  cudaError_t st = cudaGetLastError();
  if (st != cudaSuccess) {
    return fail(BYOCC_E_CUDA, "%s: %s", what, cudaGetErrorString(st));
  }
  return BYOCC_OK;
}

}  // namespace byocc

BYOCC_EXPORT int32_t byocc_abi_version(void) { return %(abi)d; }

BYOCC_EXPORT const char* byocc_last_error(void) { return byocc::g_error; }

BYOCC_EXPORT int32_t byocc_set_constant(const char* name, const DLTensor* value) {
  byocc::clear_error();
  if (name == nullptr || value == nullptr) {
    return byocc::fail(BYOCC_E_CONSTANT, "byocc_set_constant: NULL name or value");
  }
  if (value->device.device_type != kDLCUDA) {
    return byocc::fail(BYOCC_E_LAYOUT, "constant %s: not a CUDA tensor", name);
  }
  int64_t numel = 1;
  for (int i = 0; i < value->ndim; ++i) numel *= value->shape[i];
  std::lock_guard<std::mutex> lock(byocc::g_constants_mutex);
  byocc::constants_table()[name] = byocc::ConstantSlot{byocc::data_of(value), value->dtype, numel,
                                                       value->device.device_id};
  return BYOCC_OK;
}
"""
# g_error lives in an anonymous namespace; the exported accessor needs it by name.
RUNTIME_SOURCE = RUNTIME_SOURCE.replace(
    "thread_local char g_error[1024];\n", "").replace(
    "namespace byocc {\nnamespace {\n", "namespace byocc {\nthread_local char g_error[1024];\nnamespace {\n", 1)
RUNTIME_SOURCE = RUNTIME_SOURCE.replace("%(abi)d", str(ABI_VERSION))

GEMM_HEADER = r"""// byocc_gemm.h: the problem a generated GEMM kernel unit solves (internal interface
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
"""


def runtime_source() -> str:
    return RUNTIME_SOURCE


def common_sources() -> tuple[SourceFile, ...]:
    """The three files every generated library contains."""
    return (
        SourceFile("src/byocc_abi.h", ABI_HEADER, "header"),
        SourceFile("src/byocc_internal.h", INTERNAL_HEADER, "header"),
        SourceFile("src/byocc_gemm.h", GEMM_HEADER, "header"),
        SourceFile("src/runtime.cu", RUNTIME_SOURCE, "light"),
    )


__all__ = ["ABI_HEADER", "GEMM_HEADER", "INTERNAL_HEADER", "RUNTIME_SOURCE", "common_sources", "runtime_source"]
