"""DLPack structs in ctypes and the two ways the native runner fills them
(docs/codegen.md#c-abi, #native-runner).

* :func:`capsule_tensor`: the ``DLTensor*`` inside a ``__dlpack__()`` capsule (legacy
  ``"dltensor"`` or DLPack 1.x ``"dltensor_versioned"``), zero copy; the capsule must stay
  alive (and unconsumed) while the pointer is used.
* :class:`TensorSlots`: per-thread buffers holding ``DLTensor`` structs written with
  ``struct.pack_into`` from a tensor's own attributes (``data_ptr()``, shape, strides), the
  fast path for PyTorch and ``__cuda_array_interface__`` producers.
* :func:`framework_of`: the adapter of a tensor's framework (PyTorch, CuPy and other
  ``__cuda_array_interface__`` producers, numpy, any ``__dlpack__`` object): how to describe,
  allocate, upload and synchronise its tensors.
"""

from __future__ import annotations

import ctypes
import struct
from collections.abc import Sequence
from typing import Any

from byocc.backends.dtypes import DTYPES as _DTYPE_TABLE
from byocc.ir import ExternalToolError
from byocc.ir import InputError

kDLCPU, kDLCUDA, kDLCUDAHost, kDLCUDAManaged = 1, 2, 3, 13

#: dtype name -> (DLPack type code, bits): the DLPack columns of the one dtype table
#: (:mod:`byocc.backends.dtypes`), as the tuples the fast path packs.
DTYPES: dict[str, tuple[int, int]] = {row.name: (row.dlpack_code, row.bits) for row in _DTYPE_TABLE.values()}


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


_DELETER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", _DELETER)]


class DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [("version", DLPackVersion), ("manager_ctx", ctypes.c_void_p),
                ("deleter", _DELETER), ("flags", ctypes.c_uint64), ("dl_tensor", DLTensor)]


_LAYOUT = "<QiiiBBHQQQ"  # DLTensor, 48 bytes
assert struct.calcsize(_LAYOUT) == ctypes.sizeof(DLTensor) == 48
_VERSIONED_OFFSET = DLManagedTensorVersioned.dl_tensor.offset

_get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_get_pointer.restype = ctypes.c_void_p
_get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_is_valid = ctypes.pythonapi.PyCapsule_IsValid
_is_valid.restype = ctypes.c_int
_is_valid.argtypes = [ctypes.py_object, ctypes.c_char_p]


def capsule_tensor(capsule: object) -> int:
    """The address of the ``DLTensor`` a DLPack capsule holds."""
    if _is_valid(capsule, b"dltensor"):
        return int(_get_pointer(capsule, b"dltensor"))  # DLManagedTensor starts with it
    if _is_valid(capsule, b"dltensor_versioned"):
        return int(_get_pointer(capsule, b"dltensor_versioned")) + _VERSIONED_OFFSET
    raise TypeError("not an unconsumed DLPack capsule")


def dltensor(address: int) -> DLTensor:
    """A view of the ``DLTensor`` at ``address`` (for inspection and tests)."""
    return DLTensor.from_address(address)


class TensorSlots:
    """``count`` slots, each a ``DLTensor`` followed by room for ``max_rank`` dims of shape
    and strides, in one buffer; ``pointers`` is the ``const DLTensor* const*`` array over
    them. Filling a slot is one ``struct.pack_into`` (a compiled ``Struct`` per rank)."""

    def __init__(self, count: int, max_rank: int):
        self.count = count
        self.max_rank = max_rank
        self.stride = 48 + 16 * max_rank
        self.buffer = (ctypes.c_char * max(count * self.stride, 1))()
        self.base = ctypes.addressof(self.buffer)
        self.pointers = (ctypes.c_void_p * max(count, 1))()
        for i in range(count):
            self.pointers[i] = self.base + self.stride * i
        self.pointers_address = ctypes.addressof(self.pointers)
        self.extra: list[object] = []  # per-call storage for ranks above max_rank

    def fill(self, i: int, data: int, device_type: int, device_id: int, code: int, bits: int,
             shape: Sequence[int], strides: Sequence[int] | None) -> None:
        """Write slot ``i`` (strides in elements; None: compact)."""
        ndim = len(shape)
        at = self.stride * i
        slot = self.base + at
        if ndim <= self.max_rank:
            if strides is None:
                _struct(ndim, False).pack_into(self.buffer, at, data, device_type, device_id, ndim,
                                               code, bits, 1, slot + 48, 0, 0, *shape)
            else:
                _struct(ndim, True).pack_into(self.buffer, at, data, device_type, device_id, ndim,
                                              code, bits, 1, slot + 48, slot + 48 + 8 * ndim, 0,
                                              *shape, *strides)
        else:
            arr = (ctypes.c_int64 * (2 * ndim))(*shape, *(strides or ()))
            self.extra.append(arr)
            dims = ctypes.addressof(arr)
            struct.pack_into(_LAYOUT, self.buffer, at, data, device_type, device_id, ndim, code,
                             bits, 1, dims, dims + 8 * ndim if strides is not None else 0, 0)
        self.pointers[i] = slot


_STRUCTS: dict[tuple[int, bool], struct.Struct] = {}


def _struct(ndim: int, strided: bool) -> struct.Struct:
    s = _STRUCTS.get((ndim, strided))
    if s is None:
        s = _STRUCTS[(ndim, strided)] = struct.Struct(f"{_LAYOUT}{ndim * (2 if strided else 1)}q")
    return s


# --------------------------------------------------------------------------- frameworks
class Framework:
    """How to describe, allocate and synchronise one framework's tensors."""

    name = "dlpack"

    def describe(self, slots: TensorSlots, i: int, t: Any, keep: list, stream: int = 0) -> None:
        # DLPack's stream argument: the consumer's stream (1: the legacy default stream), so
        # the producer orders its pending work before ours; none for host tensors.
        if int(t.__dlpack_device__()[0]) == kDLCUDA:
            capsule = t.__dlpack__(stream=stream or 1)
        else:
            capsule = t.__dlpack__()
        keep.append(capsule)
        slots.pointers[i] = capsule_tensor(capsule)

    def device(self, t: Any) -> tuple[int, int]:
        dev = t.__dlpack_device__()
        return int(dev[0]), int(dev[1])

    def empty(self, like: Any, shape: tuple[int, ...], dtype: str) -> Any:
        raise InputError(f"cannot allocate outputs for {type(like).__name__} tensors; pass out=")

    def upload(self, like: Any, array: Any) -> Any:
        raise InputError(f"cannot upload constants for {type(like).__name__} tensors")

    def current_stream(self, device: tuple[int, int]) -> int:
        return 0

    def synchronize(self, device: tuple[int, int]) -> None:
        if device[0] == kDLCUDA:
            _cudart_synchronize(device[1])


class _Numpy(Framework):
    name = "numpy"

    def empty(self, like, shape, dtype):
        import numpy as np

        return np.empty(shape, dtype=dtype)

    def upload(self, like, array):
        return array

    def synchronize(self, device):
        pass


class _Torch(Framework):
    name = "torch"

    def __init__(self) -> None:
        import torch

        self.torch = torch
        self._dtypes: dict[Any, tuple[int, int]] = {}

    def describe(self, slots, i, t, keep, stream=0):
        dt = self._dtypes.get(t.dtype)
        if dt is None:
            name = str(t.dtype).rpartition(".")[2]
            if name not in DTYPES:
                return super().describe(slots, i, t, keep, stream)
            dt = self._dtypes[t.dtype] = DTYPES[name]
        dev = t.device
        kind = kDLCUDA if dev.type == "cuda" else kDLCPU
        slots.fill(i, t.data_ptr(), kind, dev.index or 0, dt[0], dt[1], t.shape, t.stride())

    def device(self, t):
        dev = t.device
        return (kDLCUDA if dev.type == "cuda" else kDLCPU), dev.index or 0

    def empty(self, like, shape, dtype):
        return self.torch.empty(shape, dtype=getattr(self.torch, dtype), device=like.device)

    def upload(self, like, array):
        return self.torch.from_numpy(array.copy()).to(like.device)

    def current_stream(self, device):
        if device[0] != kDLCUDA:
            return 0
        return int(self.torch.cuda.current_stream(device[1]).cuda_stream)

    def synchronize(self, device):
        if device[0] == kDLCUDA:
            self.torch.cuda.synchronize(device[1])


class _CudaArray(Framework):
    """``__cuda_array_interface__`` producers; CuPy also allocates."""

    name = "cuda_array_interface"

    def __init__(self, cupy: Any = None) -> None:
        self.cupy = cupy
        self._dtypes: dict[str, tuple[int, int]] = {}

    def describe(self, slots, i, t, keep, stream=0):
        cai = t.__cuda_array_interface__
        typestr = cai["typestr"]
        dt = self._dtypes.get(typestr)
        if dt is None:
            import numpy as np

            dt = self._dtypes[typestr] = DTYPES.get(np.dtype(typestr).name, (255, 0))
        shape = cai["shape"]
        strides = cai.get("strides")
        if strides is not None:
            size = dt[1] // 8 or 1
            strides = [s // size for s in strides]
        slots.fill(i, cai["data"][0], kDLCUDA, self.device(t)[1], dt[0], dt[1], shape, strides)

    def device(self, t):
        dev = getattr(t, "device", None)
        return kDLCUDA, int(getattr(dev, "id", 0) or 0)

    def empty(self, like, shape, dtype):
        if self.cupy is None:
            return super().empty(like, shape, dtype)
        with self.cupy.cuda.Device(self.device(like)[1]):
            return self.cupy.empty(shape, dtype=dtype)

    def upload(self, like, array):
        if self.cupy is None:
            return super().upload(like, array)
        with self.cupy.cuda.Device(self.device(like)[1]):
            return self.cupy.asarray(array)

    def current_stream(self, device):
        if self.cupy is None:
            return 0
        return int(self.cupy.cuda.get_current_stream().ptr)

    def synchronize(self, device):
        if self.cupy is None:
            return super().synchronize(device)
        with self.cupy.cuda.Device(device[1]):
            self.cupy.cuda.Device().synchronize()


#: tensor type -> its adapter (filled on first sight of a type)
frameworks: dict[type, Framework] = {}


def framework_of(t: Any) -> Framework:
    """The adapter for ``t``'s type (cached per type)."""
    fw = frameworks.get(type(t))
    if fw is None:
        module = type(t).__module__.split(".")[0]
        if module == "torch":
            fw = _Torch()
        elif hasattr(t, "__cuda_array_interface__"):
            fw = _CudaArray(__import__("cupy") if module == "cupy" else None)
        elif module == "numpy":
            fw = _Numpy()
        elif hasattr(t, "__dlpack__"):
            fw = Framework()
        else:
            raise InputError(f"{type(t).__name__} is not a tensor (no __dlpack__)")
        frameworks[type(t)] = fw
    return fw


_cudart: Any = None


def _cudart_synchronize(device: int) -> None:
    global _cudart
    if _cudart is None:
        for name in ("libcudart.so.13", "libcudart.so.12", "libcudart.so"):
            try:
                _cudart = ctypes.CDLL(name)
                break
            except OSError:
                continue
        else:
            raise ExternalToolError("libcudart not found (needed by synchronize())")
    for call in (lambda: _cudart.cudaSetDevice(device), lambda: _cudart.cudaDeviceSynchronize()):
        rc = call()
        if rc != 0:
            _cudart.cudaGetErrorString.restype = ctypes.c_char_p
            raise RuntimeError(_cudart.cudaGetErrorString(rc).decode())  # the runner's E_CUDA


__all__ = [
    "DLDataType", "DLDevice", "DLManagedTensor", "DLManagedTensorVersioned", "DLTensor", "DTYPES",
    "Framework", "TensorSlots", "capsule_tensor", "dltensor", "framework_of", "frameworks", "kDLCPU",
    "kDLCUDA",
]
