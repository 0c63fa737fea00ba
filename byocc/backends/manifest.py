"""``manifest.json``: the schema the writer (``byocc partition -o``), ``byocc build`` and the
native runner share (docs/codegen.md#manifest).

Top level: ``byocc_version``, ``abi_version``, ``codegen_version``, ``cutlass_version`` (when
a unit uses CUTLASS), ``archs``, ``library`` (``lib/libbyocc_<stem>.so``), ``header`` (the
public header declaring its functions, ``src/byocc_<stem>.h``), ``build_file``,
``cmake_file``, ``uses_cutlass``, ``uses_cublaslt``, ``constants_file``, ``codegen_options`` (per
backend that generated code, the options its codegen used, defaults filled in), ``build`` (the build
plan, :meth:`byocc.backends.codegen.BuildPlan.to_json`: what ``byocc build`` reads) and
``functions``: one entry per offloaded function
(:meth:`byocc.backends.codegen.EntryPoint.to_json`), sorted by symbol.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from byocc.ir import InputError
from byocc.ir import Span

from .codegen import ABI_VERSION
from .codegen import CODEGEN_VERSION
from .codegen import BuildPlan
from .codegen import GeneratedModule

MANIFEST = "manifest.json"
REQUIRED_TOP = ("abi_version", "library", "functions")
REQUIRED_FUNCTION = ("symbol", "backend", "num_args", "args", "outputs", "scratch_bytes", "symbols")


def library_path(stem: str) -> str:
    return f"lib/libbyocc_{stem}.so"


def constants_file(stem: str) -> str:
    return f"{stem}.constants.npz"


def build_manifest(stem: str, modules: Iterable[GeneratedModule], *, cutlass_version: str | None,
                   archs: Iterable[str] | None = None, extra_functions: Iterable[dict] = (),
                   plan: BuildPlan | None = None, header: str | None = None) -> dict[str, Any]:
    """The manifest of an output folder. ``plan`` defaults to the plan of ``modules`` alone
    (none without modules: nothing to build); ``archs`` to the plan's; ``header``: the path
    of the library's public header (``src/byocc_<stem>.h``), recorded when given."""
    from byocc import __version__

    mods = list(modules)
    if plan is None and mods:
        plan = BuildPlan.of(stem, mods)
    functions = [e.to_json() for m in mods for e in m.entries] + list(extra_functions)
    functions.sort(key=lambda f: str(f.get("symbol")))
    manifest: dict[str, Any] = {
        "byocc_version": __version__,
        "abi_version": ABI_VERSION,
        "codegen_version": CODEGEN_VERSION,
        "archs": sorted(set(archs if archs is not None else plan.archs if plan else ())),
        "library": library_path(stem),
        "build_file": "build.ninja",
        "cmake_file": "CMakeLists.txt",
        "uses_cutlass": bool(plan and plan.needs_cutlass) or any(m.needs_cutlass for m in mods),
        "uses_cublaslt": bool(plan and plan.needs_cublaslt) or any(m.needs_cublaslt for m in mods),
        "codegen_options": {m.backend: dict(m.options) for m in mods},
        "functions": functions,
    }
    if plan is not None:
        manifest["build"] = plan.to_json()
    else:  # nothing to build (stand-in modules only): no build files either
        del manifest["build_file"], manifest["cmake_file"]
    if header is not None:
        manifest["header"] = header
    if cutlass_version is not None and manifest["uses_cutlass"]:
        manifest["cutlass_version"] = cutlass_version
    if any(f.get("constants") for f in functions):
        manifest["constants_file"] = constants_file(stem)
    return manifest


def dumps(manifest: dict[str, Any]) -> str:
    return json.dumps(manifest, indent=2, sort_keys=True) + "\n"


def load_manifest(directory: str | Path) -> dict[str, Any]:
    """Read and validate ``DIR/manifest.json``; :class:`InputError` names what is wrong and
    where: every message starts with the manifest's path (a JSON syntax error carries its
    line and column as the error's span)."""
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
        raise InputError(f"not valid JSON: {exc.msg}", Span(str(path), exc.lineno, exc.colno)) from None
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
        if f.get("status") in ("unsupported", "no_code"):  # listed, nothing to call
            continue
        for key in REQUIRED_FUNCTION:
            if key not in f:
                raise InputError(f"{path}: functions[{i}] ({f.get('symbol', '?')}) misses '{key}'")
    return data


def load_plan(directory: str | Path, manifest: dict[str, Any]) -> BuildPlan:
    """The build plan ``DIR/manifest.json`` records; :class:`InputError` when it has none (a
    manifest from before the plan) or a malformed one."""
    path = Path(directory) / MANIFEST
    section = manifest.get("build")
    if not isinstance(section, dict):
        raise InputError(f"{path}: no build plan (field 'build'); re-run `byocc partition -o {directory}`")
    try:
        return BuildPlan.from_json(section)
    except (KeyError, TypeError, ValueError) as exc:
        raise InputError(f"{path}: malformed build plan ({type(exc).__name__}: {exc}); "
                         f"re-run `byocc partition -o {directory}`") from None


__all__ = ["MANIFEST", "build_manifest", "constants_file", "dumps", "library_path", "load_manifest",
           "load_plan"]
