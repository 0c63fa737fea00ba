"""FuseOpsByPattern (docs/partitioning.md#fuseopsbypattern) and its ``annotate_codegen`` step (docs/partitioning.md#codegen-wrappers).

Driver (docs/partitioning.md#driver): for each pattern entry in list order, one complete pass over the module left by
the previous entry: partition every visited function (``pattern_partition``), then
materialise the groups (``materialize``) with one name supply shared by the functions, which
are visited by name (or in ``entry_functions`` order). A function where the pattern formed no
group is not rewritten.

Where TVM 0.27 fails, byocc stays correct: a match whose groups would depend on each other
in a cycle (TVM raises ``InternalError`` for 2-cycles, E22, and emits ill-formed IR for
longer ones, E34) is backed out, latest accepted match first, and the function partitioned
again without it; the output is well formed.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field
from typing import Any
from typing import ClassVar

from byocc.dpl import as_fusion_pattern
from byocc.dpl import backend_of
from byocc.ir import BindingBlock
from byocc.ir import Call
from byocc.ir import Function
from byocc.ir import GlobalVar
from byocc.ir import If
from byocc.ir import IRModule
from byocc.ir import NameSupply
from byocc.ir import PassError
from byocc.ir import PatternError
from byocc.ir import SeqExpr
from byocc.ir import Var
from byocc.ir import VarBinding
from byocc.ir.functor import map_values

from .function_table import FunctionTable
from .group_plan import UsesMemo
from .group_plan import nested_seqs
from .materialize import Materializer
from .materialize import plan_function
from .pass_manager import Pass
from .pattern_partition import FunctionIndex
from .pattern_partition import partition


def _skip_function(func: Any) -> bool:
    """Functions a pattern pass never visits: non-Relax, primitive, composite, external."""
    if not isinstance(func, Function):
        return True
    attrs = func.attrs
    return bool(attrs.get("Primitive")) or "Composite" in attrs or "Codegen" in attrs


def visited_functions(mod: IRModule, entry_functions: Sequence[str] | None) -> list[str]:
    """Names of the functions one pattern pass rewrites, in visiting order (5.1)."""
    if entry_functions is not None and len(entry_functions):
        names = []
        for name in entry_functions:
            if name not in mod:
                raise PassError(f"FuseOpsByPattern: entry function {name!r} is not in the module")
            if not isinstance(mod[name], Function):
                raise PassError(f"FuseOpsByPattern: entry function {name!r} is not a Relax function")
            if not _skip_function(mod[name]):
                names.append(name)
        return names
    return [name for name in sorted(mod.names()) if not _skip_function(mod[name])]


def run_pattern(mod: IRModule, entry: Any, *, bind_constants: bool = True,
                entry_functions: Sequence[str] | None = None,
                indexes: dict | None = None,
                warn: Callable[[str], None] | None = None,
                uses: UsesMemo | None = None) -> IRModule:
    """One complete pass of one pattern entry over ``mod`` (partition + rewrite).

    ``indexes`` caches :class:`FunctionIndex` per function name across calls (an entry is
    rebuilt when the function object changed); ``uses`` remembers each binding value's
    variable uses across calls."""
    entry = as_fusion_pattern(entry)
    uses = uses if uses is not None else UsesMemo()
    indexes = indexes if indexes is not None else {}
    planned = []
    for name in visited_functions(mod, entry_functions):
        func = mod[name]
        assert isinstance(func, Function)  # visited_functions lists Relax functions only
        index = indexes.get(name)
        if index is None or index.func is not func:
            index = indexes[name] = FunctionIndex(func, uses)
        skip: set = set()
        while True:
            part = partition(index, entry, frozenset(skip))
            if not part.accepted:
                plan = None
                break
            group_of, group_attrs = part.resolve()
            plan = plan_function(func, group_of, group_attrs, uses, index.complete_usages)
            if plan.cycle is None:
                break
            # back out, for every cycle, the latest accepted match among its groups
            for _, groups in plan.cycles:
                roots = [g for g in groups if getattr(g, "attrs", None)]
                if not roots:
                    raise PassError("FuseOpsByPattern: cyclic dependency between groups that "
                                    "no match formed")
                skip.add(max(roots, key=lambda g: g.accepted).var)
        if plan is not None and plan.changes:
            planned.append((name, func, plan, group_attrs, index.var2val))
    if not planned:
        return mod
    table = FunctionTable(mod)
    supply = NameSupply()
    for name, func, plan, group_attrs, var2val in planned:
        mat = Materializer(table, group_attrs, lift_constants=not bind_constants, supply=supply,
                           warn=warn, uses=uses)
        new = mat.rewrite(func, plan, var2val)
        if new is not func:
            table.update(name, new)
            # the next pattern's index of this function starts with the use lists the
            # rewrite carried over (the other blocks' are computed when a check needs them)
            index = indexes[name] = FunctionIndex(new, uses)
            index.seed_usages(mat.carried_usages)
    return table.module()


# ============================================================================ annotate
def annotate_codegen(mod: IRModule) -> IRModule:
    """Wrap every called composite in a public ``Codegen`` function (docs/partitioning.md#codegen-wrappers).

    For each Relax function without ``Composite``/``Codegen`` (name order), a call of a
    global carrying ``Composite`` is redirected to a wrapper named
    ``<composite name>_<backend>`` (added with de-duplication), whose body binds
    ``local_func`` to the composite (``Primitive`` removed) and returns ``output =
    local_func(params...)``. The composite global is removed. Idempotent.
    """
    table = FunctionTable(mod)
    supply = NameSupply()
    redirected: dict[str, GlobalVar] = {}
    for name in sorted(mod.names()):
        func = table.get(name)
        if not isinstance(func, Function) or "Composite" in func.attrs or "Codegen" in func.attrs:
            continue
        new = _Redirect(table, supply, redirected).function(func)
        if new is not func:
            table.update(name, new)
    return table.module()


class _Redirect:
    def __init__(self, table: FunctionTable, supply: NameSupply, redirected: dict):
        self.table = table
        self.supply = supply
        self.redirected = redirected

    def function(self, func: Function) -> Function:
        body = self.seq(func.body)
        if body is func.body:
            return func
        return Function(func.params, body, func.ret_struct_info, func.is_pure, dict(func.attrs),
                        func.span)

    def seq(self, seq: SeqExpr) -> SeqExpr:
        return map_values(seq, self.expr)

    def expr(self, e: Any) -> Any:
        if isinstance(e, Call):
            if isinstance(e.op, GlobalVar):
                gv = self.wrapper(e.op)
                if gv is not None:
                    return Call(gv, e.args, e.attrs, e.sinfo_args, e.struct_info, e.span)
            return e
        if isinstance(e, Function):
            return self.function(e)
        if isinstance(e, SeqExpr):
            return self.seq(e)
        if isinstance(e, If):
            a, b = self.expr(e.true_branch), self.expr(e.false_branch)
            if a is e.true_branch and b is e.false_branch:
                return e
            return If(e.cond, a, b, e.struct_info, e.span)
        return e

    def wrapper(self, gvar: GlobalVar) -> GlobalVar | None:
        name = gvar.name_hint
        hit = self.redirected.get(name)
        if hit is not None:
            return hit
        func = self.table.get(name)
        if not isinstance(func, Function):
            return None
        composite = func.attrs.get("Composite")
        if not isinstance(composite, str):
            return None
        codegen = backend_of(composite)
        if codegen is None:
            raise PatternError(f"pattern name {composite!r} has no backend prefix: expected "
                               "'<backend>.<name>', e.g. 'cutlass.matmul'")
        symbol = f"{name}_{codegen}"
        inner = func.with_attrs(Primitive=None)
        params = tuple(Var(p.name_hint, p.struct_info) for p in func.params)
        local = Var("local_func", inner.struct_info)
        output = Var("output", inner.ret_struct_info)
        call = Call(local, params, None, (), inner.ret_struct_info)
        body = SeqExpr((BindingBlock((VarBinding(local, inner), VarBinding(output, call))),), output)
        wrapper = Function(params, body, func.ret_struct_info, inner.is_pure,
                           {"Codegen": codegen, "global_symbol": symbol})
        self.table.remove(name)
        new_name = self.table.add(wrapper, symbol, self.supply)
        if new_name != symbol and self.table.get(new_name) is wrapper:
            # a taken name: keep the module well formed (global_symbol == global name)
            self.table.update(new_name, wrapper.with_attrs(global_symbol=new_name))
        gv = self.table.global_var(new_name)
        self.redirected[name] = gv
        return gv


# ============================================================================ the pass
def check_single_assignment(mod: IRModule, names: Sequence[str]) -> None:
    """Raise PassError (a ValueError, as TVM raises) if a variable object is bound more than
    once in the functions ``names`` (one function object stored under two names, say): the
    grouping maps each bound variable to one group. Linear, no recursion."""
    where: dict = {}
    for name in names:
        func = mod[name]
        assert isinstance(func, Function)  # visited_functions lists Relax functions only
        stack: list = [func.body]
        while stack:
            seq = stack.pop()
            for block in seq.blocks:
                for b in block.bindings:
                    first = where.get(b.var)
                    if first is not None:
                        also = "twice in" if first == name else f"in {first!r} and in"
                        raise PassError(
                            f"FuseOpsByPattern: the module is not in single-assignment form: variable "
                            f"{b.var.name_hint!r} is bound {also} {name!r}; give each function its own "
                            "variables (copy a function by parsing or building it again)")
                    where[b.var] = name
                    nested: list = []
                    nested_seqs(b.value, nested)
                    stack.extend(nested)


@dataclass(frozen=True)
class FuseOpsByPattern(Pass):
    """TVM ``relax.transform.FuseOpsByPattern`` (docs/partitioning.md#fuseopsbypattern).

    ``patterns``: FusionPattern entries or 2-5 element tuples, highest priority first.
    ``bind_constants``: keep tensor constants inside the composites (False: ``param_<k>``).
    ``annotate_codegen``: wrap composites in ``Codegen`` functions (5.6).
    ``entry_functions``: names of the functions to partition (default: all, by name).
    ``warn``: receives warnings (default: written to stderr).
    """

    name: ClassVar[str] = "FuseOpsByPattern"
    opt_level: ClassVar[int] = 0

    patterns: Sequence[Any] = ()
    bind_constants: bool = True
    annotate_codegen: bool = False
    entry_functions: Sequence[str] | None = None
    warn: Callable[[str], None] | None = field(default=None, compare=False)

    def run(self, mod: IRModule) -> IRModule:
        entries = [as_fusion_pattern(p) for p in self.patterns]
        # (the pass manager pauses the garbage collector around every pass)
        check_single_assignment(mod, visited_functions(mod, self.entry_functions))
        indexes: dict = {}
        uses = UsesMemo()
        for entry in entries:
            mod = run_pattern(mod, entry, bind_constants=self.bind_constants,
                              entry_functions=self.entry_functions, indexes=indexes,
                              warn=self.warn, uses=uses)
        if self.annotate_codegen:
            mod = annotate_codegen(mod)
        return mod


__all__ = ["FuseOpsByPattern", "annotate_codegen", "run_pattern", "visited_functions"]
