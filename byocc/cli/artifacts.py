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
from collections.abc import Mapping
from typing import Any

from byocc.backends.codegen import ABI_VERSION
from byocc.backends.codegen import GeneratedModule
from byocc.ir import Function
from byocc.ir import InternalError
from byocc.ir import TensorStructInfo
from byocc.ir import TupleStructInfo

SOURCE_DIR = "src"


def output_files(stem: str, partitioned, codegen) -> dict[str, str | bytes]:
    """Relative path -> content for everything ``-o`` writes."""
    files: dict[str, str | bytes] = {}
    for kind, mod in (("partitioned", partitioned), ("codegen", codegen)):
        files.update(module_files(f"{stem}.{kind}", mod))
    modules = list(codegen.attrs.get("external_mods", ()))
    generated = [m for m in modules if isinstance(m, GeneratedModule)]
    legacy = [m for m in modules if not isinstance(m, GeneratedModule)]
    offloaded: Mapping[str, Function] = codegen.extras.get("offloaded", {})
    if generated:
        files.update(generated_files(stem, generated, offloaded, codegen.attrs.get("const_name_to_constant", {})))
        return files
    sources_of: dict[str, list[str]] = {}
    extra_fields: dict[str, dict] = {}
    for module in legacy:
        paths = []
        for name, text in getattr(module, "sources", ()):
            path = f"{SOURCE_DIR}/{name}"
            _put(files, path, text)
            paths.append(path)
        for symbol in getattr(module, "symbols", ()):
            sources_of.setdefault(symbol, []).extend(paths)
        for symbol, fields in dict(getattr(module, "manifest_entries", {}) or {}).items():
            extra_fields[symbol] = dict(fields)
        for name, text in dict(getattr(module, "build_files", {}) or {}).items():
            files[name] = text
    functions = []
    for symbol in sorted(offloaded):
        entry = function_entry(symbol, offloaded[symbol])
        entry["source_files"] = sorted(set(sources_of.get(symbol, ())))
        entry.update(extra_fields.get(symbol, {}))
        functions.append(entry)
    from byocc import __version__

    manifest = {"byocc_version": __version__, "abi_version": ABI_VERSION, "functions": functions}
    files["manifest.json"] = json.dumps(manifest, indent=2, sort_keys=True) + "\n"
    return files


def _put(files: dict, path: str, text) -> None:
    if path in files and files[path] != text:
        raise InternalError(f"two codegen modules write different {path}")
    files[path] = text


def generated_files(stem: str, modules: list, offloaded: Mapping[str, Function], named_constants: Mapping) -> dict:
    """Sources, build files, manifest and constants of CUDA codegen modules
    (spec/backends.md sections 13, 14, 17)."""
    from byocc.backends.build_files import build_files
    from byocc.backends.cuda import common_sources
    from byocc.backends.manifest import build_manifest
    from byocc.backends.manifest import constants_file
    from byocc.backends.manifest import dumps

    files: dict[str, str | bytes] = {}
    sources = list(common_sources())
    for m in modules:
        sources.extend(m.sources)
    unique = {}
    for src in sources:
        if src.path in unique and unique[src.path].text != src.text:
            raise InternalError(f"two codegen modules write different {src.path}")
        unique[src.path] = src
    sources = [unique[p] for p in sorted(unique)]
    for src in sources:
        files[src.path] = src.text
    needs_cutlass = any(m.needs_cutlass for m in modules)
    needs_cublaslt = any(m.needs_cublaslt for m in modules)
    files.update(build_files(stem, sources, needs_cutlass=needs_cutlass, needs_cublaslt=needs_cublaslt))
    cutlass_version = None
    archs = {"sm_80"}
    if any(s.unit == "sm90" for s in sources):
        archs.add("sm_90a")
    if needs_cutlass:
        cutlass_version = _cutlass_version()
    covered = {e.symbol for m in modules for e in m.entries}
    extra = [dict(function_entry(sym, offloaded[sym]), status="no_code")
             for sym in sorted(offloaded) if sym not in covered]
    manifest = build_manifest(stem, modules, cutlass_version=cutlass_version, archs=archs,
                              extra_functions=extra)
    files["manifest.json"] = dumps(manifest)
    arrays = constant_values(modules, named_constants)
    if arrays:
        import io

        import numpy as np

        buffer = io.BytesIO()
        np.savez(buffer, **arrays)
        files[constants_file(stem)] = buffer.getvalue()
    return files


def _cutlass_version() -> str | None:
    try:
        from byocc.backends.cutlass.kernels import cutlass_version
    except ImportError:
        return None
    try:
        return cutlass_version()
    except Exception:  # headers missing: the build will say so
        return None


def constant_values(modules: list, named: Mapping) -> dict:
    """Name -> numpy value of every constant bound inside an offloaded function (RunCodegen's
    ``const_name_to_constant``); constants read without their sidecar have no value and are
    left out (the runner then reports the missing key)."""
    wanted = {c.name for m in modules for e in m.entries for c in e.constants}
    return {name: named[name].data for name in sorted(wanted)
            if name in named and getattr(named[name], "data", None) is not None}


def module_files(stem: str, mod) -> dict[str, str | bytes]:
    """``<stem>.relax`` and, when it prints constants with known values, the sidecar
    ``<stem>.npz`` that ``byocc.text.read_file`` reads back."""
    from byocc.text import constant_arrays
    from byocc.text import print_module_with_metadata

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
