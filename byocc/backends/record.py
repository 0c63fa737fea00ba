"""Backend records: what byocc knows about one backend, in one place, looked up by name.

A :class:`Backend` names everything that differs between backends: its pattern table, the
convolution layout its patterns want, the rewrites its TVM partition driver runs before
fusion, the steps it runs after, its codegen, the codegen's option schema and which
composites the codegen can generate. ``transform`` never sees a backend's name; the CLI
(``byocc partition --backend NAME``) and the Python facade
(``relax.backend.cuda.cutlass.partition_for_cutlass``) read the record and hand its fields
to the passes as parameters (:mod:`byocc.backends.driver`).

The records are the one registry of backends: the pattern registry gets their tables, and
RunCodegen finds a backend's codegen through them (this module installs the lookup,
:func:`byocc.transform.set_codegen_lookup`, when it is imported; :func:`register_codegen`
sets a record's codegen). The built-in records (``cutlass``, ``cublas``) are registered when
this package is imported, in TVM's order; they name their code with :func:`lazy`, so nothing
of theirs is imported until used, and their pattern tables are built on the first use of the
pattern registry. :func:`register_backend` adds a user's record the same way.
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Callable
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from typing import overload

from byocc.ir import Function
from byocc.ir import InputError
from byocc.ir import IRModule
from byocc.ir import PassError
from byocc.transform import CodegenFn
from byocc.transform import set_codegen_lookup

from .options import OptionSchema
from .registry import defer_table
from .registry import get_patterns_with_prefix
from .registry import register_patterns
from .registry import remove_patterns

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
    rewrites of docs/codegen.md#partition_for_cutlass, step 1)."""
    post_partition: tuple[ModuleStep, ...] = ()
    """Steps on the module after FuseOpsByPattern, in order (cutlass: annotate_workspace,
    then AllocateWorkspace; docs/codegen.md#partition_for_cutlass, steps 3-4)."""
    codegen: Callable | None = None
    """Its codegen for RunCodegen (``fn(functions, options, constant_names)``); None when it
    has none (RunCodegen's ``codegens=`` argument may still give one)."""
    options: OptionSchema = OptionSchema()
    """The options its codegen reads from ``target_options[name]`` (``--codegen-option
    NAME.KEY=VALUE``)."""
    supports: Callable[[str], bool] | None = None
    """The codegen's answer to "can you generate code for this composite?" (a pattern name);
    None when it does not say."""

    def __post_init__(self) -> None:
        if self.options.backend != self.name:  # messages name the backend
            object.__setattr__(self, "options", dataclasses.replace(self.options, backend=self.name))

    def patterns(self) -> list:
        """Its entries in the pattern registry, highest priority first (TVM's
        ``get_patterns_with_prefix(name)``: also entries registered later under its name)."""
        return get_patterns_with_prefix(self.name)

    def generates(self, composite: str) -> bool | None:
        """Whether its codegen generates code for ``composite``: False without a codegen,
        None when the codegen does not say (no ``supports``)."""
        if self.codegen is None:
            return False
        return None if self.supports is None else bool(self.supports(composite))


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
    """Register ``backend`` under its name: its table goes into the pattern registry, its
    codegen becomes RunCodegen's for the name. Registering a name twice without ``override``
    is an error. Returns the record."""
    if not isinstance(backend, Backend):
        raise TypeError(f"register_backend: expected a Backend, got {type(backend).__name__}")
    if not backend.name or "." in backend.name:
        raise ValueError(f"register_backend: a backend's name is a pattern-name prefix without "
                         f"a dot, got {backend.name!r}")
    load_builtin_backends()
    if backend.name in _BACKENDS and not override:
        raise ValueError(f"a backend named {backend.name!r} is already registered")
    _BACKENDS[backend.name] = backend
    if backend.table is not None:
        register_patterns(list(backend.table()))
    return backend


def unregister_backend(name: str) -> None:
    """Remove backend ``name``: its record (and so its codegen) and its entries in the
    pattern registry (names ``<name>.*``). An unknown name is an :class:`~byocc.ir.InputError`."""
    get_backend(name)  # raises for an unknown name
    _BACKENDS.pop(name, None)
    remove_patterns([e.name for e in get_patterns_with_prefix(name + ".")])


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


@overload
def register_codegen(backend: str, fn: None = None, override: bool = False) -> Callable[[Any], Any]: ...
@overload
def register_codegen(backend: str, fn: Callable | str, override: bool = False) -> Any: ...
def register_codegen(backend: str, fn: Callable | str | None = None, override: bool = False) -> Any:
    """Make ``fn`` the codegen of ``backend``: a callable ``fn(functions, options,
    constant_names) -> list of runtime modules``, or a lazy ``"package.module:function"``
    string imported on first use. Usable as a decorator (``@register_codegen("mine")``). The
    record of ``backend`` gets the codegen (a name without a record gets a record holding
    only it); a backend that has one already needs ``override``."""

    def _register(f):
        load_builtin_backends()
        record = _BACKENDS.get(backend)
        if record is not None and record.codegen is not None and not override:
            raise ValueError(f"a codegen for backend '{backend}' is already registered")
        codegen = lazy(f) if isinstance(f, str) else f
        _BACKENDS[backend] = (Backend(backend, codegen=codegen) if record is None
                              else dataclasses.replace(record, codegen=codegen))
        return f

    if fn is None:
        return _register
    return _register(fn)


def unregister_codegen(backend: str) -> None:
    """Take ``backend``'s codegen away (a record that held only the codegen goes with it)."""
    record = _BACKENDS.get(backend)
    if record is None:
        return
    if record == Backend(backend, codegen=record.codegen):
        del _BACKENDS[backend]
    else:
        _BACKENDS[backend] = dataclasses.replace(record, codegen=None)


def registered_codegens() -> list[str]:
    """Names of the backends that have a codegen, sorted."""
    load_builtin_backends()
    return sorted(name for name, b in _BACKENDS.items() if b.codegen is not None)


def get_codegen(backend: str) -> CodegenFn:
    """The codegen of ``backend`` (imported when the record names it lazily); :class:`PassError`
    if it has none."""
    fn = _codegen_of(backend)
    if fn is None:
        raise PassError(f"no codegen registered for backend '{backend}'")
    return fn


def _codegen_of(backend: str) -> CodegenFn | None:
    """RunCodegen's lookup: the record's codegen, or None."""
    load_builtin_backends()
    record = _BACKENDS.get(backend)
    if record is None or record.codegen is None:
        return None
    fn = record.codegen
    return fn.resolve() if isinstance(fn, Lazy) else fn


_BUILTINS: list[Backend] = []


def load_builtin_backends() -> None:
    """Register the built-in records (:data:`BUILTIN_BACKENDS`) once; later calls do nothing."""
    if _BUILTINS:
        return
    for module_name in BUILTIN_BACKENDS:
        record = importlib.import_module(module_name).BACKEND
        _BUILTINS.append(record)
        _BACKENDS[record.name] = record
        if record.table is not None:
            defer_table(record.table)  # built on the pattern registry's first use


set_codegen_lookup(_codegen_of)

__all__ = [
    "BUILTIN_BACKENDS", "Backend", "FunctionRewrite", "Lazy", "ModuleStep", "get_backend",
    "get_codegen", "lazy", "load_builtin_backends", "register_backend", "register_codegen",
    "registered_backends", "registered_codegens", "unregister_backend", "unregister_codegen",
]
