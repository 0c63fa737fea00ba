// runtime.cu: library-wide state of a byocc-generated library: the error buffer, the
// per-device cache and the bound constants. Contains no kernels.
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <map>
#include <mutex>
#include <string>

#include "byocc_internal.h"

namespace byocc {
thread_local char g_error[1024];
namespace {


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

BYOCC_EXPORT int32_t byocc_abi_version(void) { return 1; }

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
