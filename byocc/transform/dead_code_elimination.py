"""DeadCodeElimination (docs/partitioning.md#deadcodeelimination; TVM ``relax.transform.DeadCodeElimination``).

Steps, each linear in the size of the module:

1. Entries = the given names + every public function (``global_symbol`` set) + extern
   functions. Remove every function not reachable from an entry through global references
   (if some reference names a function missing from the module, nothing is removed).
2. In every Relax function remove the bindings whose variable is unused: a variable is used
   when a kept binding's value, the function result (or a nested function's result) or a
   ``match_cast`` value refers to it. Transitively dead chains go too (worklist over use
   counts). Outside dataflow blocks a binding whose value contains an impure call is kept.
   ``match_cast`` bindings are never removed. Blocks left empty vanish, and blocks of one
   kind that end up adjacent merge (TVM's normalizer does both to a changed SeqExpr).
3. Remove functions that became unreachable.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from byocc.ir import Binding
from byocc.ir import BindingBlock
from byocc.ir import DataflowBlock
from byocc.ir import ExprMutator
from byocc.ir import ExternFunc
from byocc.ir import Function
from byocc.ir import IRModule
from byocc.ir import PassError
from byocc.ir import SeqExpr
from byocc.ir import Var
from byocc.ir import VarBinding
from byocc.ir.analysis import all_global_vars
from byocc.ir.analysis import collect_var_usage
from byocc.ir.analysis import contains_impure_call

from .pass_manager import Pass
from .pass_manager import map_functions


def is_public(func: object) -> bool:
    """A top-level function is public (externally linked) when it carries ``global_symbol``."""
    return isinstance(func, ExternFunc) or "global_symbol" in getattr(func, "attrs", {})


def _unused_vars(func: Function) -> set[Var]:
    usage = collect_var_usage(func)
    exposed = set(usage.outputs)
    for var, value in usage.bound_values.items():
        if contains_impure_call(value):
            exposed.add(var)
    users = usage.downstream_usage
    # reverse edges: user -> the variables its binding uses
    uses: dict[Var, list[Var]] = {}
    count: dict[Var, int] = {}
    for var, us in users.items():
        count[var] = len(us)
        for u in us:
            uses.setdefault(u, []).append(var)
    work = [v for v, n in count.items() if n == 0 and v not in exposed]
    unused = set(work)
    while work:
        v = work.pop()
        for d in uses.get(v, ()):
            n = count[d] - 1
            count[d] = n
            if n == 0 and d not in exposed and d not in unused:
                unused.add(d)
                work.append(d)
    return unused


class _Remover(ExprMutator):
    def __init__(self, unused: set[Var]) -> None:
        super().__init__()
        self.unused = unused
        self.in_dataflow = False

    def visit_binding_block(self, block: BindingBlock) -> BindingBlock:
        saved = self.in_dataflow
        self.in_dataflow = isinstance(block, DataflowBlock)
        try:
            return super().visit_binding_block(block)
        finally:
            self.in_dataflow = saved

    def visit_binding(self, binding: Binding) -> list[Binding]:
        if isinstance(binding, VarBinding) and binding.var in self.unused and (
                self.in_dataflow or not contains_impure_call(binding.value)):
            return []
        return super().visit_binding(binding)

    def visit_seq_expr_(self, e: SeqExpr) -> SeqExpr:
        new = super().visit_seq_expr_(e)
        return new if new is e else merge_adjacent_blocks(new)


def merge_adjacent_blocks(seq: SeqExpr) -> SeqExpr:
    """``seq`` with adjacent blocks of one kind joined and empty blocks dropped: what TVM's
    normalizer does to every SeqExpr a mutator changed (``NormalizeBlocks``), so removing the
    plain block between two dataflow blocks leaves one dataflow block."""
    blocks: list[BindingBlock] = []
    for block in seq.blocks:
        if not block.bindings:
            continue
        if blocks and type(blocks[-1]) is type(block):
            prev = blocks.pop()
            block = type(prev)(prev.bindings + block.bindings, prev.span)
        blocks.append(block)
    if len(blocks) == len(seq.blocks) and all(a is b for a, b in zip(blocks, seq.blocks)):
        return seq
    return SeqExpr(tuple(blocks), seq.body, seq.span)


def remove_all_unused(func: Function) -> Function:
    """``func`` without its dead bindings (step 2 above); the same object if none."""
    unused = _unused_vars(func)
    if not unused:
        return func
    # only binding variables matter; parameters are never "removed"
    return _Remover(unused).visit_function_(func)


def _remove_unreachable(mod: IRModule, entries: list[str]) -> IRModule:
    reachable = set(entries)
    stack = list(entries)
    while stack:
        name = stack.pop()
        if name not in mod:
            return mod  # a reference to a missing function: keep everything (as TVM)
        func = mod[name]
        if not isinstance(func, Function):
            continue
        for gv in all_global_vars(func):
            if gv.name_hint not in reachable:
                reachable.add(gv.name_hint)
                stack.append(gv.name_hint)
    drop = [name for name in mod.names() if name not in reachable]
    return mod.without(*drop) if drop else mod


def dead_code_elimination(mod: IRModule, entry_functions: Sequence[str] = ()) -> IRModule:
    """Functional form of :class:`DeadCodeElimination`."""
    entries: list[str] = []
    for name in entry_functions:
        if name not in mod:
            raise PassError(f"DeadCodeElimination: entry function '{name}' is not in the module")
        entries.append(name)
    for name, func in mod.items():
        if name not in entries and is_public(func):
            entries.append(name)
    mod = _remove_unreachable(mod, entries)
    mod = map_functions(mod, remove_all_unused)
    return _remove_unreachable(mod, entries)


@dataclass(frozen=True)
class DeadCodeElimination(Pass):
    """Remove unreachable functions and unused bindings (module docstring)."""

    entry_functions: tuple[str, ...] = ()

    name: ClassVar[str] = "DeadCodeElimination"
    opt_level: ClassVar[int] = 1

    def __post_init__(self) -> None:
        object.__setattr__(self, "entry_functions", tuple(self.entry_functions or ()))

    def run(self, mod: IRModule) -> IRModule:
        return dead_code_elimination(mod, self.entry_functions)


__all__ = ["DeadCodeElimination", "dead_code_elimination", "is_public", "remove_all_unused"]
