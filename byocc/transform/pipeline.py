"""The two BYOC partitioning paths as one call (docs/partitioning.md#the-two-paths).

* ``path="annotate"``: FuseOpsByPattern(patterns, bind_constants, annotate_codegen=True)
  [-> RunCodegen]
* ``path="merge"``: FuseOpsByPattern(patterns, bind_constants, annotate_codegen=False)
  -> MergeCompositeFunctions [-> RunCodegen]

A backend's own steps come as parameters, never as its name: ``rewrites`` (functions
``Function -> Function``) run first as one :class:`RewriteFunctions` pass, ``post_fusion``
(``IRModule -> IRModule`` callables or passes) right after FuseOpsByPattern, before
MergeCompositeFunctions (as TVM's ``partition_for_cutlass(annotate_codegen=False)`` followed
by MergeCompositeFunctions does). With ``canonicalize=True`` CanonicalizeBindings runs first (the seed example E01 of docs/partitioning.md#example-index does;
the conformance oracle does not, so it is off by default). The passes run as one
:class:`Sequential` named ``partition`` under a :class:`PassContext` carrying
``instruments`` (plus a :class:`WellFormedInstrument` with ``verify_each``); without
instruments the current context is used.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from collections.abc import Mapping
from collections.abc import Sequence
from typing import Literal

from byocc.ir import Function
from byocc.ir import IRModule
from byocc.ir import PassError

from .canonicalize_bindings import CanonicalizeBindings
from .fuse_ops_by_pattern import FuseOpsByPattern
from .merge_composite_functions import MergeCompositeFunctions
from .pass_manager import ModulePass
from .pass_manager import Pass
from .pass_manager import PassContext
from .pass_manager import PassInstrument
from .pass_manager import Sequential
from .pass_manager import WellFormedInstrument
from .prepare import RewriteFunctions
from .run_codegen import CodegenFn
from .run_codegen import RunCodegen

PathName = Literal["annotate", "merge"]


def partition_passes(patterns: Sequence, path: PathName = "annotate", bind_constants: bool = True,
                     entry_functions: Sequence[str] | None = None, run_codegen: bool = False,
                     canonicalize: bool = False,
                     target_options: Mapping[str, Mapping] | None = None,
                     codegens: Mapping[str, CodegenFn] | None = None,
                     rewrites: Sequence[Callable[..., Function]] = (),
                     post_fusion: Sequence[Callable[[IRModule], IRModule]] = ()) -> list[Pass]:
    """The pass list of one path (see :func:`partition`)."""
    if path not in ("annotate", "merge"):
        raise PassError(f"unknown partitioning path '{path}' (expected 'annotate' or 'merge')")
    passes: list[Pass] = []
    if canonicalize:
        passes.append(CanonicalizeBindings())
    if rewrites:
        passes.append(RewriteFunctions(tuple(rewrites)))
    passes.append(FuseOpsByPattern(patterns, bind_constants=bind_constants,
                                   annotate_codegen=(path == "annotate"),
                                   entry_functions=entry_functions))
    passes += [step if isinstance(step, Pass) else ModulePass(step, getattr(step, "__name__", "step"))
               for step in post_fusion]
    if path == "merge":
        passes.append(MergeCompositeFunctions())
    if run_codegen:
        passes.append(RunCodegen(target_options, codegens=codegens))
    return passes


def partition(mod: IRModule, patterns: Sequence, path: PathName = "annotate",
              bind_constants: bool = True, entry_functions: Sequence[str] | None = None,
              run_codegen: bool = False, instruments: Sequence[PassInstrument] = (), *,
              canonicalize: bool = False, verify_each: bool = False,
              target_options: Mapping[str, Mapping] | None = None,
              codegens: Mapping[str, CodegenFn] | None = None,
              rewrites: Sequence[Callable[..., Function]] = (),
              post_fusion: Sequence[Callable[[IRModule], IRModule]] = ()) -> IRModule:
    """Partition ``mod`` for the backends named by ``patterns`` along ``path``.

    ``patterns``: FusionPattern entries or TVM-style tuples, highest priority first.
    ``run_codegen`` appends RunCodegen (``target_options`` / ``codegens`` are passed to it).
    ``verify_each`` checks well-formedness after every pass (raising a WellFormedError).
    ``rewrites`` and ``post_fusion``: a backend's steps around fusion (module docstring).
    """
    passes = partition_passes(patterns, path, bind_constants, entry_functions, run_codegen,
                              canonicalize, target_options, codegens, rewrites, post_fusion)
    insts = list(instruments)
    if verify_each:
        insts.append(WellFormedInstrument())
    ctx = PassContext(instruments=insts) if insts else contextlib.nullcontext()
    with ctx:
        return Sequential(passes, name="partition")(mod)


__all__ = ["partition", "partition_passes"]
