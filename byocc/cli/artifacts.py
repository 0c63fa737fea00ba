"""What ``byocc partition -o DIR`` writes, computed in memory (docs/architecture.md#partition-output-folder).

* ``<stem>.partitioned.relax``: the module after partitioning (what stdout shows without -o);
* ``<stem>.codegen.relax``: the module after RunCodegen;
* the sources of every module RunCodegen's codegens returned (under ``src/``), the common
  sources of a CUDA library, its public header ``src/byocc_<stem>.h`` (declaring every
  exported function) and the build files written from its build plan
  (:class:`byocc.backends.codegen.BuildPlan`);
* ``manifest.json`` (:mod:`byocc.backends.manifest`, one schema): one entry per external
  function, the build plan (``build``), the library.

Deterministic: same input, byte-identical files (sorted keys, no timestamps).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

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
    offloaded: Mapping[str, Function] = codegen.extras.get("offloaded", {})
    # a stand-in module (a codegen registered through the Python API that produces no CUDA
    # module, e.g. byocc.transform.stub_codegen): its files are written, its functions listed
    # with "status": "no_code" and the files that name them
    stand_in_files: dict[str, list[str]] = {}
    for module in modules:
        if isinstance(module, GeneratedModule):
            continue
        paths = [f"{SOURCE_DIR}/{name}" for name, _ in getattr(module, "sources", ())]
        for (_, text), path in zip(getattr(module, "sources", ()), paths):
            _put(files, path, text)
        for symbol in getattr(module, "symbols", ()):
            stand_in_files.setdefault(symbol, []).extend(paths)
    files.update(generated_files(stem, generated, offloaded, stand_in_files,
                                 codegen.attrs.get("const_name_to_constant", {})))
    return files


def _put(files: dict, path: str, text) -> None:
    if path in files and files[path] != text:
        raise InternalError(f"two codegen modules write different {path}")
    files[path] = text


def generated_files(stem: str, modules: list, offloaded: Mapping[str, Function],
                    stand_in_files: Mapping[str, list[str]], named_constants: Mapping) -> dict:
    """Sources, build files (from the build plan), manifest and constants of the CUDA
    codegen modules; without any, the manifest alone."""
    from byocc.backends.codegen import BuildPlan
    from byocc.backends.manifest import build_manifest
    from byocc.backends.manifest import constants_file
    from byocc.backends.manifest import dumps

    files: dict[str, str | bytes] = {}
    plan = header = None
    if modules:
        from byocc.backends.build_files import build_files
        from byocc.backends.cuda import common_sources

        common = list(common_sources())
        for src in [*common, *(s for m in modules for s in m.sources)]:
            _put(files, src.path, src.text)
        plan = BuildPlan.of(stem, modules, common)
        files.update(build_files(plan))
        header = library_header_file(stem, modules, files)
        files[header.path] = header.text
    cutlass_version = None
    if plan is not None and plan.needs_cutlass:
        from byocc.backends.toolchain import optional_cutlass_version

        cutlass_version = optional_cutlass_version()  # None: headers missing, the build says so
    covered = {e.symbol for m in modules for e in m.entries}
    extra = []
    for sym in sorted(offloaded):
        if sym in covered:
            continue
        entry = dict(function_entry(sym, offloaded[sym]), status="no_code")
        if sym in stand_in_files:
            entry["source_files"] = sorted(set(stand_in_files[sym]))
        extra.append(entry)
    manifest = build_manifest(stem, modules, cutlass_version=cutlass_version, plan=plan,
                              extra_functions=extra, header=header and header.path)
    files["manifest.json"] = dumps(manifest)
    arrays = constant_values(modules, named_constants)
    if arrays:
        import io

        import numpy as np

        buffer = io.BytesIO()
        np.savez(buffer, **arrays)
        files[constants_file(stem)] = buffer.getvalue()
    return files


def library_header_file(stem: str, modules: list, taken: Mapping[str, object]):
    """``src/byocc_<stem>.h``, the library's public header (not a build input: no unit
    includes it), as a :class:`~byocc.backends.codegen.SourceFile`."""
    from byocc.backends.codegen import SourceFile
    from byocc.backends.cuda.library_header import header_name
    from byocc.backends.cuda.library_header import library_header
    from byocc.backends.manifest import library_path

    path = header_name(stem, taken)
    text = library_header(path, stem, library_path(stem), [e for m in modules for e in m.entries])
    return SourceFile(path, text, "header")


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
        "global_symbol": func.attrs.get("global_symbol", symbol),
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
