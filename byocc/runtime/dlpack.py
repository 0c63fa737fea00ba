"""DLPack structs in ctypes and the two ways the native runner fills them
(spec/backends.md 6.1, 17.4).

* :func:`capsule_tensor`: the ``DLTensor*`` inside a ``__dlpack__()`` capsule (legacy
  ``"dltensor"`` or DLPack 1.x ``"dltensor_versioned"``), zero copy; the capsule must stay
  alive (and unconsumed) while the pointer is used.
* :class:`TensorSlots`: per-thread buffers holding ``DLTensor`` structs written with
  ``struct.pack_into`` from a tensor's own attributes (``data_ptr()``, shape, strides), the
  fast path for PyTorch and ``__cuda_array_interface__`` producers.
"""

from __future__ import annotations

import ctypes
import struct
from typing import Sequence

kDLCPU, kDLCUDA, kDLCUDAHost, kDLCUDAManaged = 1, 2, 3, 13

#: dtype name -> (DLPack type code, bits)
DTYPES: dict[str, tuple[int, int]] = {
    "bool": (6, 8),
    "int8": (0, 8), "int16": (0, 16), "int32": (0, 32), "int64": (0, 64),
    "uint8": (1, 8), "uint16": (1, 16), "uint32": (1, 32), "uint64": (1, 64),
    "float16": (2, 16), "float32": (2, 32), "float64": (2, 64),
    "bfloat16": (4, 16),
}


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


__all__ = [
    "DLDataType", "DLDevice", "DLManagedTensor", "DLManagedTensorVersioned", "DLTensor", "DTYPES",
    "TensorSlots", "capsule_tensor", "dltensor", "kDLCPU", "kDLCUDA",
]
