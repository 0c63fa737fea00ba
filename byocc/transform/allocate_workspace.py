"""``AllocateWorkspace``: give offloaded functions that need scratch memory a workspace
argument (TVM's ``relax.transform.AllocateWorkspace``, docs/codegen.md#partition_for_cutlass, #effects-on-the-printed-module).

A top-level function carrying the integer attribute ``WorkspaceSize`` (set by cutlass's
``annotate_workspace`` on attention composites and their ``Codegen`` wrappers) is rewritten:

1. W = the largest ``WorkspaceSize`` in the module; nothing happens when there is none.
2. Each such function (in module order) gets a trailing parameter
   ``workspace: R.Tensor((W,), dtype="uint8")``; a ``Composite`` function bound inside a
   ``Codegen`` wrapper gets one too, and the wrapper passes its own to it. Parameter names
   come from one supply shared by the whole pass: ``workspace``, ``workspace_1``, ...
   ``WorkspaceSize`` is dropped.
3. The function is re-added under a fresh module name (``name1``, or ``name2`` ... when
   taken; ``global_symbol`` follows) at the end of the module and the old one is removed.

TVM visits functions in its IRModule map order; byocc uses the module's insertion order,
which callers keep in step with TVM's (see ``annotate_workspace`` in
:mod:`byocc.relax.backend.cuda.cutlass`).
4. Every other non-extern function (module order) gets, at the start of its first dataflow
   block, ``workspace_main = R.builtin.alloc_tensor(R.shape([W]), R.dtype("uint8"), 0,
   R.str("global"))`` (later ones ``workspace_main1``, ...), and each call to a rewritten
   function gets that tensor as a last argument.
"""

from __future__ import annotations

from collections.abc import Container
from collections.abc import Iterable
from dataclasses import dataclass
from typing import cast

from byocc.ir import Binding
from byocc.ir import BindingBlock
from byocc.ir import Call
from byocc.ir import DataflowBlock
from byocc.ir import DataflowVar
from byocc.ir import DataTypeImm
from byocc.ir import Expr
from byocc.ir import Function
from byocc.ir import GlobalVar
from byocc.ir import IRModule
from byocc.ir import MatchCast
from byocc.ir import PrimValue
from byocc.ir import SeqExpr
from byocc.ir import ShapeExpr
from byocc.ir import StringImm
from byocc.ir import TensorStructInfo
from byocc.ir import UnsupportedError
from byocc.ir import Var
from byocc.ir import VarBinding
from byocc.ir.functor import ExprMutator
from byocc.ops.registry import make_call

from .pass_manager import Pass

WORKSPACE_ATTR = "WorkspaceSize"


class _NameSupply:
    """Fresh names ``base``, ``base<sep>1``, ``base<sep>2``... with one counter per base."""

    def __init__(self, sep: str, taken: Iterable[str] = ()) -> None:
        self.sep = sep
        self.taken = set(taken)
        self.counters: dict[str, int] = {}

    def fresh(self, base: str) -> str:
        name = base
        while name in self.taken:
            self.counters[base] = self.counters.get(base, 0) + 1
            name = f"{base}{self.sep}{self.counters[base]}"
        self.taken.add(name)
        return name


class _ExternRewriter(ExprMutator):
    """Appends the workspace parameter to a Codegen/Composite function (and to the
    composite it binds), and the wrapper's workspace to calls of that composite."""

    def __init__(self, size: int) -> None:
        super().__init__()
        self.size = size
        self.names = _NameSupply("_")
        self.workspace: Var | None = None
        self.composite_vars: set[Var] = set()

    def rewrite(self, func: Function) -> Function:
        self.workspace = None
        self.composite_vars = set()
        self._memo = {}
        return self.visit_function_(func)

    def visit_function_(self, e: Function) -> Function:
        attrs = e.attrs
        if ("Codegen" in attrs or "Composite" in attrs) and isinstance(attrs.get(WORKSPACE_ATTR), int):
            param = Var(self.names.fresh("workspace"), TensorStructInfo((self.size,), "uint8", 1))
            if "Codegen" in attrs:
                self.workspace = param
            new_attrs = {k: v for k, v in attrs.items() if k != WORKSPACE_ATTR}
            body = cast(SeqExpr, self.visit_expr(e.body))  # visit_seq_expr_ gives a SeqExpr
            return Function(e.params + (param,), body, e.ret_struct_info, e.is_pure, new_attrs, e.span)
        return super().visit_function_(e)

    def visit_binding(self, binding: Binding) -> list[Binding]:
        value = self.visit_expr(binding.value)
        if isinstance(binding, VarBinding) and isinstance(value, Function):
            var = binding.var
            if value is not binding.value:
                var = type(var)(var.name_hint, value.struct_info, var.span)
                self.var_remap[binding.var] = var
            if "Composite" in value.attrs:
                self.composite_vars.add(var)
            if value is binding.value:
                return [binding]
            return [VarBinding(var, value, binding.span)]
        if value is binding.value:
            return [binding]
        if isinstance(binding, MatchCast):
            return [MatchCast(binding.var, value, binding.struct_info, binding.span)]
        return [VarBinding(binding.var, value, binding.span)]

    def visit_call_(self, e: Call) -> Expr:
        op = self.visit_expr(e.op)
        args = tuple(self.visit_expr(a) for a in e.args)
        if isinstance(op, Var) and op in self.composite_vars:
            if self.workspace is None:
                raise UnsupportedError("AllocateWorkspace: a composite call outside a Codegen function "
                                       "that has a workspace", e.span)
            return Call(op, args + (self.workspace,), e.attrs, e.sinfo_args, e.struct_info, e.span)
        if op is e.op and all(a is b for a, b in zip(args, e.args)):
            return e
        return Call(op, args, e.attrs, e.sinfo_args, e.struct_info, e.span)


class _Provider(ExprMutator):
    """Renames references to rewritten functions, allocates ``workspace_main`` in the first
    dataflow block of a caller and passes it to every call of a rewritten function."""

    def __init__(self, size: int, gvar_map: dict[str, GlobalVar], new_gvars: Container[str]) -> None:
        super().__init__()
        self.size = size
        self.gvar_map = gvar_map
        self.new_gvars = new_gvars
        self.names = _NameSupply("")
        self.workspace: Var | None = None

    def rewrite(self, func: Function, workspace: Var | None) -> Function:
        self.workspace = workspace
        self._memo = {}
        body = self.visit_seq_expr_(func.body)
        if body is func.body:
            return func
        return Function(func.params, body, func.ret_struct_info, func.is_pure, dict(func.attrs), func.span)

    def visit_global_var_(self, e: GlobalVar) -> Expr:
        return self.gvar_map.get(e.name_hint, e)

    def visit_binding_block(self, block: BindingBlock) -> BindingBlock:
        if isinstance(block, DataflowBlock) and self.workspace is None:
            alloc = make_call("relax.builtin.alloc_tensor", [
                ShapeExpr((self.size,)), DataTypeImm("uint8"), PrimValue(0, "int64"), StringImm("global")])
            var = DataflowVar(self.names.fresh("workspace_main"), alloc.struct_info)
            self.workspace = var
            inner = super().visit_binding_block(block)
            return DataflowBlock((VarBinding(var, alloc),) + tuple(inner.bindings), block.span)
        return super().visit_binding_block(block)

    def visit_call_(self, e: Call) -> Expr:
        op = self.visit_expr(e.op)
        args = tuple(self.visit_expr(a) for a in e.args)
        if isinstance(op, GlobalVar) and op.name_hint in self.new_gvars:
            if self.workspace is None:
                raise UnsupportedError(f"AllocateWorkspace: call of {op.name_hint} outside a dataflow "
                                       "block; no workspace is available there", e.span)
            return Call(op, args + (self.workspace,), e.attrs, e.sinfo_args, e.struct_info, e.span)
        if op is e.op and all(a is b for a, b in zip(args, e.args)):
            return e
        return Call(op, args, e.attrs, e.sinfo_args, e.struct_info, e.span)


def allocate_workspace(mod: IRModule) -> IRModule:
    """Run AllocateWorkspace on ``mod`` (module docstring)."""
    sizes = [f.attrs[WORKSPACE_ATTR] for _, f in mod.items()
             if isinstance(f, Function) and isinstance(f.attrs.get(WORKSPACE_ATTR), int)]
    size = max(sizes, default=0)
    if size <= 0:
        return mod
    rewriter = _ExternRewriter(size)
    rewritten = {name: rewriter.rewrite(f) for name, f in mod.items()
                 if isinstance(f, Function) and isinstance(f.attrs.get(WORKSPACE_ATTR), int)}
    module_names = _NameSupply("", mod.names())
    gvar_map: dict[str, GlobalVar] = {}
    new_gvars: dict[str, GlobalVar] = {}
    out = mod
    for name, func in rewritten.items():
        new_name = module_names.fresh(name)
        func = func.with_attrs(global_symbol=new_name)
        gvar = GlobalVar(new_name, func.struct_info)
        out = out.with_function(new_name, func, gvar).without(name)
        gvar_map[name] = gvar
        new_gvars[new_name] = gvar
    provider = _Provider(size, gvar_map, new_gvars)
    for name, member in list(out.items()):
        if not isinstance(member, Function):
            continue
        workspace: Var | None
        if name in new_gvars:
            workspace = member.params[-1]
        elif "Codegen" in member.attrs or "Composite" in member.attrs:
            continue
        else:
            workspace = None
        new = provider.rewrite(member, workspace)
        if new is not member:
            out = out.with_function(name, new, out.get_global_var(name))
    return out


@dataclass(frozen=True)
class AllocateWorkspace(Pass, name="AllocateWorkspace", transform=allocate_workspace):
    """TVM's ``relax.transform.AllocateWorkspace()`` (module docstring)."""


__all__ = ["AllocateWorkspace", "allocate_workspace"]
