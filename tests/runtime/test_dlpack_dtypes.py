"""The native runner's DLPack dtype codes are the one dtype table's (byocc/backends/dtypes.py)."""

from __future__ import annotations

from byocc.backends import dtypes
from byocc.runtime.dlpack import DTYPES


def test_dlpack_codes_are_the_dtype_table_columns():
    assert DTYPES == {row.name: (row.dlpack_code, row.bits) for row in dtypes.DTYPES.values()}
    # DLPack's DLDataTypeCode: 0 int, 1 uint, 2 float, 4 bfloat, 6 bool
    assert DTYPES["float16"] == (2, 16) and DTYPES["bfloat16"] == (4, 16) and DTYPES["bool"] == (6, 8)
    assert DTYPES["int8"] == (0, 8) and DTYPES["uint64"] == (1, 64) and DTYPES["float64"] == (2, 64)
    assert set(dtypes.WRAPPER_DTYPES) <= set(DTYPES)
