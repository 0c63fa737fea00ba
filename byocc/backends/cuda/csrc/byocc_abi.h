// byocc_abi.h: the C ABI of a byocc-generated library (ABI version 1).
//
// Every offloaded function is exported as
//   int32_t <global_symbol>(const DLTensor* const* args, int32_t num_args,
//                           void* scratch, uint64_t scratch_bytes, cudaStream_t stream);
//   uint64_t byocc_scratch_bytes_<global_symbol>(const DLTensor* const* args, int32_t num_args);
// args: the function's parameters in printed order, then its output(s) (destination passing).
// All work is enqueued on `stream`; nothing synchronises, allocates, prints or aborts.
// A non-zero return is one of the codes below; byocc_last_error() then says why.
// byocc_<stem>.h, beside this file, declares the library's functions (it includes this one).
//
// Valid C (C99 and later) and C++. cudaStream_t comes from <cuda_runtime_api.h> when the
// compiler finds it (nvcc, or -I<CUDA>/include); without the CUDA toolkit's headers it is
// declared here as the runtime API declares it (a pointer to struct CUstream_st).
#ifndef BYOCC_ABI_H_
#define BYOCC_ABI_H_

#include <stdint.h>
#if defined(__has_include)
#if __has_include(<cuda_runtime_api.h>)
#define BYOCC_HAVE_CUDA_RUNTIME_API_H_ 1
#endif
#endif
#if defined(__CUDACC__) || defined(BYOCC_HAVE_CUDA_RUNTIME_API_H_)
#include <cuda_runtime_api.h>
#else
typedef struct CUstream_st* cudaStream_t;
#endif

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

#ifdef __cplusplus
#define BYOCC_EXTERN_C extern "C"
#else
#define BYOCC_EXTERN_C
#endif
#define BYOCC_EXPORT BYOCC_EXTERN_C __attribute__((visibility("default")))

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
