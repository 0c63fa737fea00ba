"""``src/byocc_<stem>.h``: the public header of one generated library (docs/codegen.md#c-abi).

It includes ``byocc_abi.h`` (DLTensor, the return codes, the library-wide functions) and
declares every exported entry point and its scratch query, each under a comment that says
what it computes (the Relax function, its composites in call order with their pattern
ranks), its arguments in order with dtype and shape, its outputs, scratch and constants.
Valid C (C99 and later) and C++: ``extern "C"`` only under ``__cplusplus``. Rendered from
``cuda/templates/library_header.h.j2``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from byocc.backends.codegen import EntryPoint

from .cxx import c_identifier
from .step import dims_text
from .templates import render

#: The library-wide functions ``runtime.cu`` exports, declared in ``byocc_abi.h``.
LIBRARY_FUNCTIONS = ("byocc_abi_version", "byocc_last_error", "byocc_set_constant")


def header_name(stem: str, taken: Iterable[str] = ()) -> str:
    """``src/byocc_<stem>.h``; ``src/byocc_<stem>_lib.h`` when that path is one of the
    library's other files (a model named ``abi``, ``gemm``, ``internal``, ``cublaslt``)."""
    path = f"src/byocc_{stem}.h"
    return f"src/byocc_{stem}_lib.h" if path in set(taken) else path


def include_guard(path: str) -> str:
    base = path.rsplit("/", 1)[-1]
    return re.sub(r"[^A-Za-z0-9]", "_", base, flags=re.ASCII).upper() + "_"


def library_header(path: str, stem: str, library: str, entries: Iterable[EntryPoint]) -> str:
    """The text of the header at ``path`` for the entry points of library ``library``."""
    functions = [_function(e) for e in sorted(entries, key=lambda e: e.symbol)]
    return render("cuda/library_header.h.j2", file=path.rsplit("/", 1)[-1], guard=include_guard(path),
                  stem=stem, library=library, functions=functions, library_functions=LIBRARY_FUNCTIONS)


def _function(entry: EntryPoint) -> dict:
    tensors = [*((t, "input") for t in entry.args), *((t, "output") for t in entry.outputs)]
    ranks = list(entry.pattern_ranks) + [None] * (len(entry.composites) - len(entry.pattern_ranks))
    if entry.scratch_bytes == 0:
        scratch = "none (pass NULL, 0)"
    elif entry.scratch_bytes is not None:
        scratch = f"{entry.scratch_bytes} bytes"
    else:
        scratch = f"depends on the shapes: {entry.scratch_expr or 'ask the query'} bytes"
    return {
        "symbol": c_identifier(entry.symbol),
        "backend": entry.backend,
        "composites": list(zip(entry.composites, ranks)),
        "num_args": entry.num_args,
        "tensors": [{"index": i, "name": t.name, "dtype": t.dtype, "shape": dims_text(t.shape),
                     "role": t.role, "kind": kind} for i, (t, kind) in enumerate(tensors)],
        "scratch": scratch,
        "constants": [{"name": c.name, "dtype": c.dtype, "shape": dims_text(c.shape)}
                      for c in entry.constants],
    }


__all__ = ["LIBRARY_FUNCTIONS", "header_name", "include_guard", "library_header"]
