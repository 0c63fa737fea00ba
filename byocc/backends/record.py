"""Backend records: what byocc knows about one backend, in one place, looked up by name.

A :class:`Backend` names everything that differs between backends: its pattern table, the
convolution layout its patterns want, the rewrites its TVM partition driver runs before
fusion, the steps it runs after, and its codegen. ``transform`` never sees a backend's name;
the CLI (``byocc partition --backend NAME``) and the Python facade
(``relax.backend.cuda.cutlass.partition_for_cutlass``) read the record and hand its fields
to the passes as parameters (:mod:`byocc.backends.driver`).

The built-in records (``cutlass``, ``cublas``) are registered when this package is imported,
in TVM's order; they name their code with :func:`lazy`, so nothing of theirs is imported
until used, and their pattern tables are built on the first use of the pattern registry.
:func:`register_backend` adds a user's record the same way.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from collections.abc import Sequence
from dataclasses import dataclass

from byocc.ir import Function
from byocc.ir import InputError
from byocc.ir import IRModule

#: A rewrite of one Relax function run before fusion: ``rewrite(func, **options) -> func``
#: (the driver's keyword options, e.g. ``partition_for_cutlass``'s ``use_flash_mqa``).
FunctionRewrite = Callable[..., Function]
#: A step run on the module after FuseOpsByPattern (a :class:`~byocc.transform.Pass` is one).
ModuleStep = Callable[[IRModule], IRModule]

#: Modules defining ``BACKEND``, a built-in record, registered in this order (TVM's: its
#: conformance runner imports cutlass's table, then cublas's).
BUILTIN_BACKENDS = ("byocc.backends.cutlass.backend", "byocc.backends.cublas.backend")


@dataclass(frozen=True, slots=True)
class Backend:
    """One backend: its name and what the partitioning pipeline needs from it."""

    name: str
    """The prefix of its pattern names (``cutlass.matmul``) and the value of ``Codegen``."""
    table: Callable[[], Sequence] | None = None
    """Its pattern entries in registration order (FusionPattern or TVM-style tuples), added
    to the pattern registry when the record is registered (built-ins: on the registry's
    first use); None when its patterns are registered with ``register_patterns``."""
    preferred_layout: str | None = None
    """The data layout its convolution patterns want (``"NHWC"``); ``--prepare`` converts
    convolutions to it. None: no preference, the layout is kept."""
    rewrites: tuple[FunctionRewrite, ...] = ()
    """Rewrites of every Relax function before fusion, in order (cutlass: the attention
    rewrites of spec/backends.md section 1.1 step 1)."""
    post_partition: tuple[ModuleStep, ...] = ()
    """Steps on the module after FuseOpsByPattern, in order (cutlass: annotate_workspace,
    then AllocateWorkspace; section 1.1 steps 3-4)."""
    codegen: Callable | None = None
    """Its codegen for RunCodegen (``fn(functions, options, constant_names)``); None when
    RunCodegen's registry gets it otherwise (or it has none)."""

    def patterns(self) -> list:
        """Its entries in the pattern registry, highest priority first (TVM's
        ``get_patterns_with_prefix(name)``: also entries registered later under its name)."""
        from .registry import get_patterns_with_prefix

        return get_patterns_with_prefix(self.name)


@dataclass(frozen=True, slots=True)
class Lazy:
    """A callable named by ``"package.module:attribute"``, imported on its first call, so a
    record can name heavy code (a codegen, a pattern table) without importing it."""

    target: str

    def resolve(self) -> Callable:
        """The callable ``target`` names (importing its module)."""
        module, _, attr = self.target.partition(":")
        return getattr(importlib.import_module(module), attr)

    def __call__(self, *args, **kwargs):
        return self.resolve()(*args, **kwargs)

    @property
    def __name__(self) -> str:  # a pass made from a step is named after it (--time-passes)
        return self.target.partition(":")[2]


def lazy(target: str) -> Lazy:
    """:class:`Lazy` for ``"package.module:attribute"``."""
    if ":" not in target:
        raise ValueError(f"lazy: expected 'package.module:attribute', got {target!r}")
    return Lazy(target)


_BACKENDS: dict[str, Backend] = {}


def register_backend(backend: Backend, override: bool = False) -> Backend:
    """Register ``backend`` under its name: its table goes into the pattern registry and its
    codegen into RunCodegen's. Registering a name twice without ``override`` is an error.
    Returns the record."""
    if not isinstance(backend, Backend):
        raise TypeError(f"register_backend: expected a Backend, got {type(backend).__name__}")
    if not backend.name or "." in backend.name:
        raise ValueError(f"register_backend: a backend's name is a pattern-name prefix without "
                         f"a dot, got {backend.name!r}")
    load_builtin_backends()
    if backend.name in _BACKENDS and not override:
        raise ValueError(f"a backend named {backend.name!r} is already registered")
    _install(backend, builtin=False, override=override)
    return backend


def unregister_backend(name: str) -> None:
    """Remove backend ``name``: its record, its entries in the pattern registry (names
    ``<name>.*``) and its codegen. An unknown name is an :class:`~byocc.ir.InputError`."""
    get_backend(name)  # raises for an unknown name
    from byocc.transform import unregister_codegen

    from .registry import get_patterns_with_prefix
    from .registry import remove_patterns

    _BACKENDS.pop(name, None)
    remove_patterns([e.name for e in get_patterns_with_prefix(name + ".")])
    unregister_codegen(name)


def get_backend(name: str) -> Backend:
    """The record of backend ``name``. A name that only has entries in the pattern registry
    (``register_patterns``) gets a record with no preferences; an unknown name is an
    :class:`~byocc.ir.InputError` listing the known ones."""
    load_builtin_backends()
    record = _BACKENDS.get(name)
    if record is not None:
        return record
    known = registered_backends()
    if name in known:
        return Backend(name)
    raise InputError(f"unknown backend {name!r} (known: {', '.join(known) or 'none'})")


def registered_backends() -> list[str]:
    """Names of the registered records and of the prefixes (text before the first ``.``) of
    the pattern registry's entries, sorted."""
    from .registry import pattern_prefixes

    load_builtin_backends()
    return sorted(set(_BACKENDS) | set(pattern_prefixes()))


def builtin_tables() -> list[Callable[[], Sequence]]:
    """The built-in records' tables, in registration order (for the pattern registry)."""
    load_builtin_backends()
    return [b.table for b in _BUILTINS if b.table is not None]


_BUILTINS: list[Backend] = []


def load_builtin_backends() -> None:
    """Register the built-in records (:data:`BUILTIN_BACKENDS`) once; later calls do nothing."""
    if _BUILTINS:
        return
    for module_name in BUILTIN_BACKENDS:
        record = importlib.import_module(module_name).BACKEND
        _BUILTINS.append(record)
        _install(record, builtin=True)


def _install(backend: Backend, builtin: bool, override: bool = False) -> None:
    from byocc.transform import register_codegen
    from byocc.transform import registered_codegens

    _BACKENDS[backend.name] = backend
    if backend.codegen is not None:
        if builtin:  # a codegen the user registered first for a built-in name wins
            if backend.name not in registered_codegens():
                register_codegen(backend.name, backend.codegen)
        else:
            register_codegen(backend.name, backend.codegen, override=override)
    if not builtin and backend.table is not None:
        from .registry import register_patterns

        register_patterns(list(backend.table()))


__all__ = [
    "BUILTIN_BACKENDS", "Backend", "FunctionRewrite", "Lazy", "ModuleStep", "builtin_tables", "lazy",
    "get_backend", "load_builtin_backends", "register_backend", "registered_backends",
    "unregister_backend",
]
