"""``manifest.json``: the schema the writer (``byocc partition -o``), ``byocc build`` and the
native runner share (spec/backends.md section 14).

Top level: ``byocc_version``, ``abi_version``, ``codegen_version``, ``cutlass_version`` (when
a unit uses CUTLASS), ``archs``, ``library`` (``lib/libbyocc_<stem>.so``), ``build_file``,
``cmake_file``, ``uses_cublaslt``, ``constants_file``, ``codegen_options`` (per backend that
generated code, the options its codegen used, defaults filled in) and ``functions``: one
entry per offloaded function (:meth:`byocc.backends.codegen.EntryPoint.to_json`), sorted by
symbol.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from byocc.ir import InputError

from .codegen import ABI_VERSION
from .codegen import CODEGEN_VERSION
from .codegen import GeneratedModule

MANIFEST = "manifest.json"
REQUIRED_TOP = ("abi_version", "library", "functions")
REQUIRED_FUNCTION = ("symbol", "backend", "num_args", "args", "outputs", "scratch_bytes", "symbols")


def library_path(stem: str) -> str:
    return f"lib/libbyocc_{stem}.so"


def constants_file(stem: str) -> str:
    return f"{stem}.constants.npz"


def build_manifest(stem: str, modules: Iterable[GeneratedModule], *, cutlass_version: str | None,
                   archs: Iterable[str], extra_functions: Iterable[dict] = ()) -> dict[str, Any]:
    """The manifest of an output folder."""
    from byocc import __version__

    mods = list(modules)
    functions = [e.to_json() for m in mods for e in m.entries] + list(extra_functions)
    functions.sort(key=lambda f: str(f.get("symbol")))
    manifest: dict[str, Any] = {
        "byocc_version": __version__,
        "abi_version": ABI_VERSION,
        "codegen_version": CODEGEN_VERSION,
        "archs": sorted(set(archs)),
        "library": library_path(stem),
        "build_file": "build.ninja",
        "cmake_file": "CMakeLists.txt",
        "uses_cutlass": any(m.needs_cutlass for m in mods),
        "uses_cublaslt": any(m.needs_cublaslt for m in mods),
        "codegen_options": {m.backend: dict(m.options) for m in mods},
        "functions": functions,
    }
    if cutlass_version is not None and manifest["uses_cutlass"]:
        manifest["cutlass_version"] = cutlass_version
    if any(f.get("constants") for f in functions):
        manifest["constants_file"] = constants_file(stem)
    return manifest


def dumps(manifest: dict[str, Any]) -> str:
    return json.dumps(manifest, indent=2, sort_keys=True) + "\n"


def load_manifest(directory: str | Path) -> dict[str, Any]:
    """Read and validate ``DIR/manifest.json``; :class:`InputError` names what is wrong."""
    path = Path(directory) / MANIFEST
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"{path}: no manifest (write one with `byocc partition MODEL -o {directory}`)") from None
    except OSError as exc:
        raise InputError(f"{path}: {exc.strerror}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}:{exc.lineno}:{exc.colno}: error: not valid JSON: {exc.msg}") from None
    if not isinstance(data, dict):
        raise InputError(f"{path}: the manifest must be a JSON object")
    for key in REQUIRED_TOP:
        if key not in data:
            raise InputError(f"{path}: missing field '{key}'")
    if data["abi_version"] != ABI_VERSION:
        raise InputError(f"{path}: ABI version {data['abi_version']} (this byocc reads {ABI_VERSION}); "
                         "re-run `byocc partition -o`")
    if not isinstance(data["functions"], list):
        raise InputError(f"{path}: 'functions' must be a list")
    for i, f in enumerate(data["functions"]):
        if not isinstance(f, dict):
            raise InputError(f"{path}: functions[{i}] must be an object")
        if f.get("status") == "unsupported":
            continue
        for key in REQUIRED_FUNCTION:
            if key not in f:
                raise InputError(f"{path}: functions[{i}] ({f.get('symbol', '?')}) misses '{key}'")
    return data


__all__ = ["MANIFEST", "build_manifest", "constants_file", "dumps", "library_path", "load_manifest"]
