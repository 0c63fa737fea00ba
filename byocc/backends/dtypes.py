"""The one dtype table of the code-generation layer.

Every place that maps a Relax dtype name (``"float16"``) to a name of another world reads
this table: the C++ storage type of the generated wrappers and generic kernels, CUTLASS's
element type, ``cutlass_library``'s ``DataType`` member, cuBLASLt's ``cudaDataType_t``, and
DLPack's type code and bits (the native runner and the wrappers' argument checks).

A column that does not apply is ``None`` (no CUTLASS element type for ``bool``, no cuBLASLt
type for ``int16``). Look-ups go through :func:`dtype`, which names the dtype and the caller's
context when the table has no entry.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class DType:
    """One Relax dtype and its names elsewhere."""

    name: str
    """The Relax / numpy name (``float16``)."""
    bits: int
    dlpack_code: int
    """DLPack's ``DLDataTypeCode``: 0 int, 1 uint, 2 float, 4 bfloat, 6 bool."""
    ctype: str
    """The C++ storage type in byocc's own CUDA code (``__half``, ``int8_t``)."""
    short: str
    """A short tag used in generated kernel names; also ``cutlass_library.DataType``'s
    member name where CUTLASS has the type (``f16``, ``bf16``, ``s8``)."""
    cutlass: str | None = None
    """CUTLASS's element type (``cutlass::half_t``)."""
    cuda_r: str | None = None
    """cuBLASLt's ``cudaDataType_t`` (``CUDA_R_16F``)."""

    @property
    def itemsize(self) -> int:
        """Bytes of one element."""
        return self.bits // 8

    @property
    def is_float(self) -> bool:
        return self.dlpack_code in (2, 4)


_ROWS = (
    DType("float16", 16, 2, "__half", "f16", "cutlass::half_t", "CUDA_R_16F"),
    DType("bfloat16", 16, 4, "__nv_bfloat16", "bf16", "cutlass::bfloat16_t", "CUDA_R_16BF"),
    DType("float32", 32, 2, "float", "f32", "float", "CUDA_R_32F"),
    DType("float64", 64, 2, "double", "f64", None, "CUDA_R_64F"),
    DType("int8", 8, 0, "int8_t", "s8", "int8_t", "CUDA_R_8I"),
    DType("uint8", 8, 1, "uint8_t", "u8", "uint8_t", "CUDA_R_8U"),
    DType("int16", 16, 0, "int16_t", "s16"),
    DType("int32", 32, 0, "int32_t", "s32", "int32_t", "CUDA_R_32I"),
    DType("int64", 64, 0, "int64_t", "s64"),
    DType("uint16", 16, 1, "uint16_t", "u16"),
    DType("uint32", 32, 1, "uint32_t", "u32"),
    DType("uint64", 64, 1, "uint64_t", "u64"),
    DType("bool", 8, 6, "bool", "b8"),
)

#: dtype name -> :class:`DType`, every dtype the generated code or the runner can carry.
DTYPES: dict[str, DType] = {row.name: row for row in _ROWS}

#: The dtypes the generated wrappers accept as arguments (the DLPack checks of docs/codegen.md#argument-checks).
WRAPPER_DTYPES = ("float16", "bfloat16", "float32", "float64", "int8", "uint8", "int16", "int32",
                  "int64", "bool")

#: The A and B dtypes of byocc's GEMMs (the CUTLASS tensor-op units and the generic SIMT GEMM);
#: D is one of the rows with a CUTLASS type (``int32`` for the 8-bit inputs).
GEMM_INPUT_DTYPES = ("float16", "bfloat16", "float32", "int8", "uint8")


class UnknownDType(KeyError):
    """A dtype the table has no (or no such) name for."""


def dtype(name: str, column: str | None = None, where: str = "") -> DType:
    """The row of ``name``; with ``column``, also require that column to be set (a CUTLASS
    type for ``column="cutlass"``). Raises :class:`UnknownDType` naming ``where``."""
    row = DTYPES.get(name)
    if row is None or (column is not None and getattr(row, column) is None):
        what = f" for {column}" if column else ""
        raise UnknownDType(f"{where + ': ' if where else ''}dtype {name}{what} is not supported")
    return row


def itemsize(name: str) -> int:
    """Bytes of one element of dtype ``name``."""
    return dtype(name).itemsize


__all__ = ["DTYPES", "DType", "GEMM_INPUT_DTYPES", "UnknownDType", "WRAPPER_DTYPES", "dtype", "itemsize"]
