"""``BlockBuilder``: build Relax functions binding by binding, as TVM's Python API does.

Names follow TVM's builder (docs/partitioning.md#builder-names): one
:class:`~byocc.ir.NameSupply` per builder, shared by variables and functions; an emitted
binding without a name hint is called ``lv``, ``lv1``... inside a dataflow block and
``gv``, ``gv1``... for block outputs and bindings outside one. A hint goes through the
same supply (``mm``, ``mm1``).

Normalisation (TVM's ``Normalize``): struct info is filled in (``byocc.ops`` infers it
for calls built without it), and every argument that is not a leaf or a tuple is bound
to a fresh variable first, in argument order (``emit(add(multiply(x, y), z))`` emits
``lv = multiply(x, y)`` then ``lv1 = add(lv, z)``). The same argument object met twice
in one block is bound once.

Not supported: ``emit_te``/``call_te`` (no TE), virtual devices, and ``finalize``'s
renaming of public functions whose name differs from their ``global_symbol``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from typing import ClassVar

from byocc.ir import Binding
from byocc.ir import BindingBlock
from byocc.ir import Call
from byocc.ir import Constant
from byocc.ir import DataflowBlock
from byocc.ir import DataflowVar
from byocc.ir import DataTypeImm
from byocc.ir import Expr
from byocc.ir import ExternFunc
from byocc.ir import Function
from byocc.ir import GlobalVar
from byocc.ir import If
from byocc.ir import InputError
from byocc.ir import IRModule
from byocc.ir import MatchCast
from byocc.ir import NameSupply
from byocc.ir import ObjectStructInfo
from byocc.ir import Op
from byocc.ir import PrimValue
from byocc.ir import SeqExpr
from byocc.ir import ShapeExpr
from byocc.ir import StringImm
from byocc.ir import StructInfo
from byocc.ir import Tuple
from byocc.ir import TupleGetItem
from byocc.ir import TupleStructInfo
from byocc.ir import UnsupportedError
from byocc.ir import Var
from byocc.ir import VarBinding
from byocc.ir import structural_equal
from byocc.ir import structural_hash

_LEAVES = (Constant, ShapeExpr, PrimValue, StringImm, DataTypeImm, ExternFunc, GlobalVar, Op)


class _Frame:
    """One binding block under construction."""

    __slots__ = ("bindings", "bound", "is_dataflow")

    def __init__(self, is_dataflow: bool):
        self.is_dataflow = is_dataflow
        self.bindings: list[Binding] = []
        self.bound: dict[Expr, Var] = {}  # argument object -> the variable it was bound to

    def block(self) -> BindingBlock:
        kind = DataflowBlock if self.is_dataflow else BindingBlock
        return kind(tuple(self.bindings))


class FunctionScope:
    """``with bb.function(...)``: collects the blocks of one function."""

    def __init__(self, builder: BlockBuilder, name: str, params: list[Var] | None, attrs: dict,
                 is_pure: bool):
        self._bb = builder
        self._name = name
        self._params = params
        self._attrs = attrs
        self._is_pure = is_pure
        self._blocks: list[BindingBlock] = []
        self._emitted = False

    def __enter__(self) -> FunctionScope:  # noqa: PYI034  (Self needs Python 3.11)
        self._bb._enter_function(self)
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self._bb._exit_function(self, exc_type is not None)


class DataflowScope:
    """``with bb.dataflow()``: the bindings emitted inside form one dataflow block."""

    def __init__(self, builder: BlockBuilder):
        self._bb = builder

    def __enter__(self) -> DataflowScope:  # noqa: PYI034  (Self needs Python 3.11)
        bb = self._bb
        if bb._frames and bb._frames[-1].is_dataflow:
            raise InputError("dataflow blocks cannot be nested")
        bb._close_block()
        bb._frames.append(_Frame(True))
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        bb = self._bb
        if exc_type is not None:
            return
        if not bb._frames or not bb._frames[-1].is_dataflow:
            raise InputError("the dataflow block was closed by emit_func_output; call "
                             "emit_func_output after the `with bb.dataflow()` block")
        bb._close_block()
        bb._frames.append(_Frame(False))


class BlockBuilder:
    """TVM's ``relax.BlockBuilder`` over byocc's IR (see the module docstring)."""

    _stack: ClassVar[list[BlockBuilder]] = []

    def __init__(self, mod: IRModule | None = None):
        self._mod = mod if mod is not None else IRModule()
        self._supply = NameSupply()
        self._func_stack: list[FunctionScope] = []
        self._frames: list[_Frame] = []
        self._binding_table: dict[Var, Expr] = {}
        self._dedup: dict[int, list[str]] | None = None

    @staticmethod
    def current() -> BlockBuilder | None:
        """The builder whose ``function`` scope is innermost, or None."""
        return BlockBuilder._stack[-1] if BlockBuilder._stack else None

    # ------------------------------------------------------------------ scopes
    def function(self, name: str, params: Var | Sequence[Var] | None = None, attrs: dict | None = None,
                 pure: bool = True, private: bool = False) -> FunctionScope:
        """Scope for one function; ``params=None`` defers them to :meth:`emit_func_output`.
        A public (not ``private``) function gets ``global_symbol = name``."""
        plist = _params(params)
        attrs = dict(attrs or {})
        if not private:
            attrs["global_symbol"] = name
        return FunctionScope(self, name, plist, attrs, pure)

    def dataflow(self) -> DataflowScope:
        """Scope for one dataflow block."""
        return DataflowScope(self)

    def _enter_function(self, scope: FunctionScope) -> None:
        if self._func_stack:
            raise InputError("BlockBuilder.function scopes cannot be nested")
        BlockBuilder._stack.append(self)
        self._func_stack.append(scope)
        self._frames = [_Frame(False)]

    def _exit_function(self, scope: FunctionScope, failed: bool) -> None:
        self._func_stack.pop()
        if BlockBuilder._stack and BlockBuilder._stack[-1] is self:
            BlockBuilder._stack.pop()
        self._frames = []
        if not failed and not scope._emitted:
            raise InputError("emit_func_output must be called in a relax function")

    @property
    def _func(self) -> FunctionScope:
        if not self._func_stack:
            raise InputError("this must be called inside a `with bb.function(...)` block")
        return self._func_stack[-1]

    def _frame(self) -> _Frame:
        if not self._frames:
            raise InputError("emit must be called inside a `with bb.function(...)` block, "
                             "before emit_func_output")
        return self._frames[-1]

    def _close_block(self) -> None:
        frame = self._frames.pop() if self._frames else None
        if frame is not None and frame.bindings:
            self._func._blocks.append(frame.block())

    # ------------------------------------------------------------------ emitting
    def emit(self, expr: Expr | Sequence[Expr], name_hint: str = "") -> Var:
        """Normalise ``expr``, bind it to a new variable (a DataflowVar in a dataflow block)."""
        frame = self._frame()
        return self._emit(self.normalize(_py_tuple(expr)), frame.is_dataflow, name_hint)

    def emit_output(self, output: Expr | Sequence[Expr], name_hint: str = "") -> Var:
        """Bind an output of the current dataflow block to a new (non-dataflow) Var."""
        if not self._frame().is_dataflow:
            raise InputError("emit_output has to be called inside a dataflow block")
        return self._emit(self.normalize(_py_tuple(output)), False, name_hint)

    def match_cast(self, value: Expr, struct_info: StructInfo, name_hint: str = "") -> Var:
        """Emit ``var = R.match_cast(value, struct_info)``."""
        frame = self._frame()
        if not isinstance(struct_info, StructInfo) and hasattr(struct_info, "as_struct_info"):
            struct_info = struct_info.as_struct_info()  # an R.Tensor(...) annotation: says why not
        if not isinstance(struct_info, StructInfo):
            raise InputError(f"match_cast: expected struct info, got {struct_info!r}")
        value = self.normalize(value)
        var = self._new_var(frame.is_dataflow, name_hint, struct_info)
        frame.bindings.append(MatchCast(var, value, struct_info))
        return var

    def emit_normalized(self, binding: Binding) -> None:
        """Append an already normalised binding to the current block."""
        frame = self._frame()
        if isinstance(binding.var, DataflowVar) and not frame.is_dataflow:
            raise InputError("cannot emit a dataflow variable outside a dataflow block")
        frame.bindings.append(binding)
        if isinstance(binding, VarBinding):
            self._binding_table[binding.var] = binding.value

    def emit_func_output(self, output: Expr | Sequence[Expr],
                         params: Var | Sequence[Var] | None = None) -> GlobalVar:
        """Close the function: its body returns ``output``; add it to the module."""
        scope = self._func
        if scope._emitted:
            raise InputError("emit_func_output must be called exactly once in a relax function")
        if scope._params is not None and params is not None:
            raise InputError("function parameters have been initialized in the function with scope")
        if scope._params is None and params is None:
            raise InputError("a relax function must have parameters (give them to bb.function "
                             "or emit_func_output)")
        if scope._params is None:
            scope._params = _params(params)
        if self._frames and self._frames[-1].is_dataflow:
            raise InputError("emit_func_output must be called after the dataflow block is closed")
        scope._emitted = True
        self._close_block()
        # the body may not be a leaf: bind it in a trailing block (TVM's SeqExpr normalisation)
        self._frames.append(_Frame(False))
        body = self._normalize_arg(_py_tuple(output))
        self._close_block()
        seq = SeqExpr(tuple(_merge_blocks(scope._blocks)), body)
        func = Function(tuple(scope._params or ()), seq, body.struct_info, scope._is_pure, dict(scope._attrs))
        return self.add_func(func, scope._name)

    def _emit(self, expr: Expr, is_dataflow: bool, name_hint: str) -> Var:
        var = self._new_var(is_dataflow, name_hint, expr.struct_info)
        self._frames[-1].bindings.append(VarBinding(var, expr))
        self._binding_table[var] = expr
        return var

    def _new_var(self, is_dataflow: bool, name_hint: str, sinfo: StructInfo | None) -> Var:
        if not name_hint:
            name_hint = "lv" if is_dataflow else "gv"
        name = self._supply.fresh(name_hint)
        return DataflowVar(name, sinfo) if is_dataflow else Var(name, sinfo)

    # ------------------------------------------------------------------ normalisation
    def normalize(self, expr: Expr) -> Expr:
        """``expr`` with struct info filled in and non-leaf arguments bound (emitted)."""
        if isinstance(expr, Var):
            if expr.struct_info is None:
                raise InputError(f"variable '{expr.name_hint}' has no struct info")
            return expr
        if isinstance(expr, _LEAVES):
            return expr
        if isinstance(expr, Tuple):
            fields = tuple(self._normalize_arg(f) for f in expr.fields)
            if expr.struct_info is not None and all(a is b for a, b in zip(fields, expr.fields)):
                return expr
            return Tuple(fields, TupleStructInfo(tuple(f.struct_info for f in fields)), expr.span)
        if isinstance(expr, Call):
            return self._normalize_call(expr)
        if isinstance(expr, TupleGetItem):
            base = self._normalize_arg(expr.tuple_value)
            sinfo = expr.struct_info
            if sinfo is None:
                tsi = base.struct_info
                sinfo = tsi.fields[expr.index] if isinstance(tsi, TupleStructInfo) else ObjectStructInfo()
            if base is expr.tuple_value and sinfo is expr.struct_info:
                return expr
            return TupleGetItem(base, expr.index, sinfo, expr.span)
        if isinstance(expr, Function):
            if isinstance(expr.body, SeqExpr):
                return expr
            body = SeqExpr((), expr.body)
            return Function(expr.params, body, expr.ret_struct_info, expr.is_pure, dict(expr.attrs), expr.span)
        if isinstance(expr, (SeqExpr, If)):
            if expr.struct_info is None:
                raise InputError(f"{type(expr).__name__} without struct info cannot be emitted")
            return expr
        raise InputError(f"cannot emit a {type(expr).__name__}")

    def _normalize_call(self, call: Call) -> Call:
        args = tuple(self._normalize_arg(a) for a in call.args)
        changed = any(a is not b for a, b in zip(args, call.args))
        if call.struct_info is not None and not changed:
            return call
        sinfo = call.struct_info
        if sinfo is None:
            from byocc.ops import infer_struct_info

            sinfo = infer_struct_info(Call(call.op, args, call.attrs, call.sinfo_args, None, call.span))
        return Call(call.op, args, call.attrs, call.sinfo_args, sinfo, call.span)

    def _normalize_arg(self, arg: Any) -> Expr:
        if not isinstance(arg, Expr):
            raise InputError(f"expected a relax expression, got {type(arg).__name__}: {arg!r}")
        frame = self._frame()
        hit = frame.bound.get(arg)
        if hit is not None:
            return hit
        post = self.normalize(arg)
        if isinstance(post, (Var, Tuple, *_LEAVES)):
            return post
        var = self._emit(post, self._frames[-1].is_dataflow, "")
        self._frames[-1].bound[arg] = var
        return var

    # ------------------------------------------------------------------ module
    def add_func(self, func: Function | ExternFunc, func_name: str) -> GlobalVar:
        """Add ``func`` under a fresh name from ``func_name``; a structurally equal function
        already added (or in the starting module) is reused instead (TVM's de-duplication)."""
        if self._dedup is None:
            self._dedup = {}
            for name, f in self._mod.items():
                self._dedup.setdefault(structural_hash(f), []).append(name)
        key = structural_hash(func)
        for name in self._dedup.get(key, ()):
            if structural_equal(self._mod[name], func):
                return self._mod.get_global_var(name)
        name = self._supply.fresh(func_name)
        while name in self._mod:
            name = self._supply.fresh(func_name)
        gvar = GlobalVar(name, func.struct_info)
        self._mod = self._mod.with_function(name, func, gvar)
        self._dedup.setdefault(key, []).append(name)
        return gvar

    def update_func(self, gv: GlobalVar, updated_func: Function | ExternFunc) -> None:
        """Replace the function ``gv`` names."""
        if gv.name_hint not in self._mod:
            raise InputError(f"update_func: no function named '{gv.name_hint}'")
        self._mod = self._mod.with_function(gv.name_hint, updated_func, gv)
        self._dedup = None

    def get(self) -> IRModule:
        """The module built so far."""
        return self._mod

    def finalize(self) -> IRModule:
        """The module; every public function must already be named as its ``global_symbol``."""
        for name, func in self._mod.items():
            sym = getattr(func, "attrs", {}).get("global_symbol")
            if sym is not None and sym != name:
                raise UnsupportedError(f"finalize: function '{name}' has global_symbol '{sym}'; "
                                       "byocc does not rename functions (NormalizeGlobalVar)")
        return self._mod

    def get_unique_name(self, name_prefix: str) -> str:
        """A fresh name from the builder's name supply."""
        return self._supply.fresh(name_prefix)

    def current_block_is_dataflow(self) -> bool:
        return self._frame().is_dataflow

    def lookup_binding(self, var: Var) -> Expr | None:
        """The value ``var`` was bound to by this builder, or None."""
        return self._binding_table.get(var)


def _params(params: Var | Sequence[Var] | None) -> list[Var] | None:
    if params is None:
        return None
    if isinstance(params, Var):
        return [params]
    if isinstance(params, Tuple):
        params = params.fields
    out = list(params)
    for p in out:
        if not isinstance(p, Var):
            raise InputError(f"each function parameter must be a relax.Var, got {type(p).__name__}")
    return out


def _py_tuple(expr: Any) -> Any:
    """Python lists/tuples (nested) become relax Tuples."""
    if isinstance(expr, (list, tuple)):
        fields = tuple(_py_tuple(e) for e in expr)
        for f in fields:
            if not isinstance(f, Expr):
                raise InputError(f"expected relax expressions, got {type(f).__name__}: {f!r}")
        return Tuple(fields, TupleStructInfo(tuple(f.struct_info for f in fields)))
    return expr


def _merge_blocks(blocks: list[BindingBlock]) -> list[BindingBlock]:
    """Adjacent blocks of the same kind become one (TVM's NormalizeBlocks)."""
    out: list[BindingBlock] = []
    for block in blocks:
        if not block.bindings:
            continue
        if out and type(out[-1]) is type(block):
            out[-1] = type(block)(out[-1].bindings + block.bindings)
        else:
            out.append(block)
    return out


__all__ = ["BlockBuilder", "DataflowScope", "FunctionScope"]
