"""The C++ every generated library shares, fixed text in ``csrc/`` (docs/codegen.md#common-contract).

* ``src/byocc_abi.h``: the public header: DLPack-layout structs (an already included
  ``dlpack.h`` wins), return codes, the library-wide functions;
* ``src/byocc_internal.h``: helpers for the generated wrappers: ``byocc::fail`` (message into
  the thread-local error buffer, returns the code), argument checks, the per-device cache
  (compute capability, SM count), bound constants;
* ``src/byocc_gemm.h``: the problem a GEMM kernel unit solves (wrappers <-> kernel units);
* ``src/runtime.cu``: the definitions of ``byocc_internal.h`` and the exported functions.

No model-derived content: every output folder gets the same bytes, copied from
``byocc/backends/cuda/csrc/``. The return-code enum of ``byocc_abi.h`` is the one table of
the codes; :func:`return_codes` reads it for Python (the native runner's error names).
"""

from __future__ import annotations

import functools
import re

from byocc.backends.codegen import SourceFile

from .templates import fixed_source

#: (path in the output folder, file in ``cuda/csrc/``, build unit kind), in output order.
_COMMON_FILES = (
    ("src/byocc_abi.h", "byocc_abi.h", "header"),
    ("src/byocc_internal.h", "byocc_internal.h", "header"),
    ("src/byocc_gemm.h", "byocc_gemm.h", "header"),
    ("src/runtime.cu", "runtime.cu", "light"),
)

_ENUM = re.compile(r"^enum \{\n(.*?)^\};", re.M | re.S)
_ENUMERATOR = re.compile(r"^\s*BYOCC_([A-Z0-9_]+)\s*=\s*(\d+)\s*,?\s*(?://.*)?$")
_CONSTEXPR = r"^\s*constexpr\s+int\s+{}\s*=\s*(\d+)\s*;"


def runtime_source() -> str:
    """The text of ``src/runtime.cu``."""
    return fixed_source("cuda/runtime.cu")


def common_sources() -> tuple[SourceFile, ...]:
    """The four files every generated library contains."""
    return tuple(SourceFile(path, fixed_source(f"cuda/{file}"), unit) for path, file, unit in _COMMON_FILES)


@functools.cache
def return_codes() -> dict[int, str]:
    """The return codes of ``byocc_abi.h`` by value, without the ``BYOCC_`` prefix
    (``{0: "OK", 1: "E_NARGS", ...}``), read from the header's enum."""
    block = _ENUM.search(fixed_source("cuda/byocc_abi.h"))
    if block is None:
        raise RuntimeError("byocc_abi.h has no return-code enum")
    codes: dict[int, str] = {}
    for line in block.group(1).splitlines():
        match = _ENUMERATOR.match(line)
        if match is None:
            raise RuntimeError(f"byocc_abi.h: unreadable return-code line {line!r}")
        name, value = match.group(1), int(match.group(2))
        if value in codes:
            raise RuntimeError(f"byocc_abi.h: return code {value} is both {codes[value]} and {name}")
        codes[value] = name
    return codes


def fixed_constant(name: str, symbol: str) -> int:
    """The value of ``constexpr int <symbol> = <n>;`` in fixed C++ file ``name``
    (``"cuda/byocc_generic.cuh"``): Python limits that must match the C++ read it there."""
    match = re.search(_CONSTEXPR.format(re.escape(symbol)), fixed_source(name), re.M)
    if match is None:
        raise RuntimeError(f"{name} defines no constexpr int {symbol}")
    return int(match.group(1))


__all__ = ["common_sources", "fixed_constant", "return_codes", "runtime_source"]
