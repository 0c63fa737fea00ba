"""What ``byocc partition -o DIR`` writes, computed in memory (design.md "File formats").

* ``<stem>.partitioned.relax``: the module after partitioning (what stdout shows without -o);
* ``<stem>.codegen.relax``: the module after RunCodegen;
* the sources of every runtime module RunCodegen's codegens returned (their ``sources``
  pairs, under ``src/``), plus any build file a codegen provides;
* ``manifest.json``: one entry per external function: symbol, backend, composite names,
  argument and result shapes and dtypes, the source files that define it, and whatever
  extra fields the backend's module reports (``manifest_entries``, e.g. workspace bytes and
  the exported C signature).

Deterministic: same input, byte-identical files (sorted keys, no timestamps).
"""

from __future__ import annotations

import json
from typing import Any, Mapping

from byocc.ir import Function, InternalError, TensorStructInfo, TupleStructInfo

SOURCE_DIR = "src"


def output_files(stem: str, partitioned, codegen) -> dict[str, str | bytes]:
    """Relative path -> content for everything ``-o`` writes."""
    from byocc import __version__

    files: dict[str, str | bytes] = {}
    for kind, mod in (("partitioned", partitioned), ("codegen", codegen)):
        files.update(module_files(f"{stem}.{kind}", mod))
    modules = list(codegen.attrs.get("external_mods", ()))
    sources_of: dict[str, list[str]] = {}
    extra_fields: dict[str, dict] = {}
    for module in modules:
        paths = []
        for name, text in getattr(module, "sources", ()):
            path = f"{SOURCE_DIR}/{name}"
            if path in files and files[path] != text:
                raise InternalError(f"two codegen modules write different {path}")
            files[path] = text
            paths.append(path)
        for symbol in getattr(module, "symbols", ()):
            sources_of.setdefault(symbol, []).extend(paths)
        for symbol, fields in dict(getattr(module, "manifest_entries", {}) or {}).items():
            extra_fields[symbol] = dict(fields)
        for name, text in dict(getattr(module, "build_files", {}) or {}).items():
            files[name] = text
    offloaded: Mapping[str, Function] = codegen.extras.get("offloaded", {})
    functions = []
    for symbol in sorted(offloaded):
        entry = function_entry(symbol, offloaded[symbol])
        entry["source_files"] = sorted(set(sources_of.get(symbol, ())))
        entry.update(extra_fields.get(symbol, {}))
        functions.append(entry)
    manifest = {"byocc_version": __version__, "abi_version": 1, "functions": functions}
    files["manifest.json"] = json.dumps(manifest, indent=2, sort_keys=True) + "\n"
    return files


def module_files(stem: str, mod) -> dict[str, str | bytes]:
    """``<stem>.relax`` and, when it prints constants with known values, the sidecar
    ``<stem>.npz`` that ``byocc.text.read_file`` reads back."""
    from byocc.text import constant_arrays, print_module_with_metadata

    text, meta = print_module_with_metadata(mod)
    files: dict[str, str | bytes] = {f"{stem}.relax": text + "\n"}
    arrays = constant_arrays(meta)
    if arrays:
        import io

        import numpy as np

        buffer = io.BytesIO()
        np.savez(buffer, **arrays)
        files[f"{stem}.npz"] = buffer.getvalue()
    return files


def function_entry(symbol: str, func: Function) -> dict[str, Any]:
    """The backend-independent part of a manifest entry."""
    composites: list[str] = []
    for block in func.body.blocks:
        for binding in block.bindings:
            value = binding.value
            if isinstance(value, Function) and "Composite" in value.attrs:
                composites.append(str(value.attrs["Composite"]))
    return {
        "symbol": symbol,
        "backend": func.attrs.get("Codegen"),
        "composites": composites,
        "args": [dict(name=p.name_hint, **tensor_fields(p.struct_info)) for p in func.params],
        "outputs": [tensor_fields(s) for s in _flatten(func.ret_struct_info)],
    }


def tensor_fields(sinfo) -> dict[str, Any]:
    """``{"dtype", "shape"}`` of a tensor type; symbolic dims as their text."""
    if not isinstance(sinfo, TensorStructInfo):
        return {"dtype": None, "shape": None, "kind": type(sinfo).__name__}
    shape = None if sinfo.shape is None else [d if isinstance(d, int) else str(d) for d in sinfo.shape]
    return {"dtype": sinfo.dtype, "shape": shape}


def _flatten(sinfo) -> list:
    if isinstance(sinfo, TupleStructInfo):
        out: list = []
        for field in sinfo.fields:
            out += _flatten(field)
        return out
    return [sinfo]


__all__ = ["function_entry", "output_files", "tensor_fields"]
