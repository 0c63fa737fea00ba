"""The numpy interpreter: runs any Relax module, plain, partitioned or codegen'd.

Steps and cost:

1. Every function body is turned once into a *plan*: its bindings in order and, per
   binding, the variables whose last use it is (they are dropped from the environment
   right after it, as torch.fx's ``Interpreter`` frees values). Linear in the bindings.
2. Execution is a loop over an explicit stack of frames, never Python recursion per
   binding: a call to a Relax function (a member, a ``Composite`` local function, a
   ``Codegen`` function) pushes a frame; its result is delivered to the caller's binding
   when the frame finishes. ``If`` branches run as frames sharing the caller's variables.
3. Operator calls run the op's numpy reference (:func:`byocc.ops.bound_reference`, see
   :mod:`byocc.ops.reference`). ``R.call_dps_packed("sym", ...)`` and ``R.call_packed``
   run, in order of preference: a Python callable given in ``packed=``, the function
   RunCodegen replaced (kept in ``mod.extras["offloaded"][sym]``), or a member whose name
   or ``global_symbol`` is ``sym``.
4. Symbolic dimensions are bound from argument shapes when a function is entered and by
   ``R.match_cast``; shape expressions are evaluated with them.

``check=True`` additionally checks every bound value against its variable's struct info
(dtype, rank, shape), which catches a reference that disagrees with the op's inference.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Mapping
from collections.abc import Sequence
from typing import Any

from byocc.ir import ByoccError
from byocc.ir import Call
from byocc.ir import Constant
from byocc.ir import DataflowVar
from byocc.ir import DataTypeImm
from byocc.ir import ExternFunc
from byocc.ir import Function
from byocc.ir import GlobalVar
from byocc.ir import If
from byocc.ir import InterpretError
from byocc.ir import IRModule
from byocc.ir import MatchCast
from byocc.ir import Op
from byocc.ir import PrimValue
from byocc.ir import SeqExpr
from byocc.ir import ShapeExpr
from byocc.ir import ShapeStructInfo
from byocc.ir import StringImm
from byocc.ir import TensorStructInfo
from byocc.ir import Tuple
from byocc.ir import TupleGetItem
from byocc.ir import TupleStructInfo
from byocc.ir import UnsupportedError
from byocc.ir import Var
from byocc.ir.arith import eval_dim
from byocc.ops import bound_reference
from byocc.ops.xp import array_module
from byocc.ops.xp import is_host_array

from .plan import Plan
from .plan import free_vars
from .plan import plan_of
from .symbolic import match_struct_info
from .values import Closure
from .values import PackedFunc
from .values import ShapeValue
from .values import describe


class _Frame:
    __slots__ = ("env", "name", "plan", "pos", "ret_si", "scope")

    def __init__(self, plan: Plan, env: dict, scope: dict, name: str, ret_si=None):
        self.plan = plan
        self.pos = 0
        self.env = env
        self.scope = scope
        self.name = name
        self.ret_si = ret_si


class _Push:
    """Returned by a step that must run a frame before its binding gets a value."""

    __slots__ = ("frame",)

    def __init__(self, frame: _Frame):
        self.frame = frame


class Interpreter:
    """Runs functions of ``mod`` on numpy values.

    ``packed`` maps external symbols to Python callables (``fn(*values) -> value``); they
    take precedence over everything else for ``call_dps_packed``/``call_packed``/
    ``call_tir`` (by callee name).
    """

    def __init__(self, mod: IRModule, packed: Mapping[str, Callable[..., Any]] | None = None,
                 check: bool = False):
        self.mod = mod
        self.packed = dict(packed or {})
        self.check = check
        self._op_cache: dict[int, tuple] = {}
        self._plans: dict[int, tuple] = {}
        self._free: dict[int, tuple] = {}
        offloaded = mod.extras.get("offloaded") if hasattr(mod, "extras") else None
        self._offloaded: dict = dict(offloaded or {})
        helpers = mod.extras.get("offloaded_helpers") if hasattr(mod, "extras") else None
        self._helpers: dict = dict(helpers or {})
        #: Constant -> the value operators see (a device run maps each to its device copy)
        self._constants: dict | None = None
        self._by_symbol: dict[str, str] = {}
        for name, func in mod.items():
            if isinstance(func, Function):
                sym = func.attrs.get("global_symbol")
                if isinstance(sym, str):
                    self._by_symbol.setdefault(sym, name)
        self._specials = {
            "relax.call_dps_packed": self._call_dps_packed,
            "relax.call_tir": self._call_tir,
            "relax.builtin.alloc_tensor": self._alloc_tensor,
            # R.call_pure_packed("f", args...): the callee is an ExternFunc operand
            "relax.call_pure_packed": lambda frame, call: self._invoke(
                self._eval(frame, call.args[0]), [self._eval(frame, a) for a in call.args[1:]], call),
        }

    # ------------------------------------------------------------------ entry points
    def run(self, args: Sequence[Any] = (), entry: str = "main") -> Any:
        """Run member ``entry`` on ``args`` (numpy arrays, tuples, ShapeValues, scalars)."""
        if entry not in self.mod:
            known = ", ".join(sorted(self.mod.names())) or "none"
            raise InterpretError(f"the module has no function {entry!r} (functions: {known})")
        func = self.mod[entry]
        if not isinstance(func, Function):
            raise InterpretError(f"{entry!r} is an external function, not a Relax function")
        return self.call(Closure(func, entry), list(args))

    def call(self, callee: Any, args: list) -> Any:
        """Call a function value (Closure or PackedFunc) on ``args``. Floating-point
        exceptions (overflow to inf, 0/0) give IEEE results silently, as on a device."""
        import numpy as np

        with np.errstate(all="ignore"):
            out = self._invoke(callee, list(args), None)
            if isinstance(out, _Push):
                return self._run_frames(out.frame)
            return out

    # ------------------------------------------------------------------ the machine
    def _run_frames(self, first: _Frame) -> Any:
        stack = [first]
        while True:
            frame = stack[-1]
            plan = frame.plan
            if frame.pos < len(plan.bindings):
                binding = plan.bindings[frame.pos]
                try:
                    out = self._step(frame, binding)
                except ByoccError as err:
                    raise _with_context(err, frame, binding) from None
                except (ValueError, TypeError, IndexError, ArithmeticError, MemoryError) as err:
                    message = str(err) or type(err).__name__
                    raise _with_context(InterpretError(message), frame, binding) from err
                if isinstance(out, _Push):
                    stack.append(out.frame)
                    continue
                self._assign(frame, binding, out)
                continue
            value = self._eval(frame, plan.body)
            if frame.ret_si is not None and self.check:
                match_struct_info(frame.ret_si, value, frame.scope, None, f"the result of {frame.name}")
            stack.pop()
            if not stack:
                return value
            parent = stack[-1]
            binding = parent.plan.bindings[parent.pos]
            try:
                self._assign(parent, binding, value)
            except ByoccError as err:
                raise _with_context(err, parent, binding) from None

    def _assign(self, frame: _Frame, binding, value: Any) -> None:
        var = binding.var
        if isinstance(binding, MatchCast):
            match_struct_info(binding.struct_info, value, frame.scope, binding.span,
                              f"R.match_cast to {var.name_hint!r}")
        elif self.check:
            match_struct_info(var.struct_info, value, frame.scope, binding.span,
                              f"the value bound to {var.name_hint!r}")
        env = frame.env
        env[var] = value
        dead = frame.plan.drop_after.get(frame.pos)
        if dead is not None:
            for v in dead:
                env.pop(v, None)
        frame.pos += 1

    def _step(self, frame: _Frame, binding) -> Any:
        value = binding.value
        kind = type(value)
        if kind is Call:
            return self._call(frame, value)
        if kind is If:
            cond = self._eval(frame, value.cond)
            branch = value.true_branch if _truth(cond) else value.false_branch
            return _Push(_Frame(plan_of(branch, self._plans), frame.env, frame.scope, frame.name))
        if kind is SeqExpr:
            return _Push(_Frame(plan_of(value, self._plans), frame.env, frame.scope, frame.name))
        if kind is Function:
            captured = {v: frame.env[v] for v in free_vars(value, self._free) if v in frame.env}
            return Closure(value, binding.var.name_hint, captured, frame.scope)
        return self._eval(frame, value)

    # ------------------------------------------------------------------ expressions
    def _eval(self, frame: _Frame, expr) -> Any:
        kind = type(expr)
        if kind is Var or isinstance(expr, Var):
            try:
                return frame.env[expr]
            except KeyError:
                raise InterpretError(f"variable {expr.name_hint!r} is used before it has a value",
                                     expr.span) from None
        if kind is Constant:
            if expr.data is None:
                raise InterpretError(
                    "a constant's value is unknown (the module was read without its sidecar .npz)",
                    expr.span)
            return expr.data if self._constants is None else self._constants[expr]
        if kind is ShapeExpr:
            return ShapeValue(eval_dim(d, frame.scope, expr.span) for d in expr.values)
        if kind is PrimValue:
            v = expr.value
            return v if isinstance(v, (bool, int, float)) else eval_dim(v, frame.scope, expr.span)
        if kind is Tuple:
            return tuple(self._eval(frame, f) for f in expr.fields)
        if kind is TupleGetItem:
            tup = self._eval(frame, expr.tuple_value)
            if not isinstance(tup, tuple) or isinstance(tup, ShapeValue):
                raise InterpretError(f"indexing a {describe(tup)} as a tuple", expr.span)
            return tup[expr.index]
        if kind is StringImm or kind is DataTypeImm:
            return expr.value
        if kind is GlobalVar:
            return self._global(expr)
        if kind is ExternFunc:
            return PackedFunc(expr.global_symbol)
        if kind is Function:
            captured = {v: frame.env[v] for v in free_vars(expr, self._free) if v in frame.env}
            return Closure(expr, "local function", captured, frame.scope)
        if kind is Call or kind is If or kind is SeqExpr:
            # not in normal form: evaluate in place (depth bounded by expression nesting)
            out = self._step(frame, _Inline(expr))
            return self._run_frames(out.frame) if isinstance(out, _Push) else out
        raise InterpretError(f"cannot evaluate a {kind.__name__}", getattr(expr, "span", None))

    def _global(self, gv: GlobalVar) -> Any:
        name = gv.name_hint
        if name not in self.mod:
            helper = self._helpers.get(name)  # called by an offloaded function, dropped by DCE
            if helper is not None:
                return Closure(helper, name)
            raise InterpretError(f"call to {name!r}, which is not in the module", gv.span)
        func = self.mod[name]
        if isinstance(func, ExternFunc):
            return PackedFunc(func.global_symbol)
        return Closure(func, name)

    # ------------------------------------------------------------------ calls
    def _call(self, frame: _Frame, call: Call) -> Any:
        op = call.op
        if type(op) is Op:
            special = self._specials.get(op.name)
            if special is not None:
                return special(frame, call)
            return self._apply_op(frame, call)
        callee = self._eval(frame, op)
        args = [self._eval(frame, a) for a in call.args]
        return self._invoke(callee, args, call)

    def _invoke(self, callee: Any, args: list, call: Call | None) -> Any:
        span = call.span if call is not None else None
        if isinstance(callee, Closure):
            return _Push(self._enter(callee, args, span))
        if isinstance(callee, PackedFunc):
            return self._packed(callee.symbol, args, span)
        raise InterpretError(f"calling a {describe(callee)}, which is not a function", span)

    def _enter(self, closure: Closure, args: list, span) -> _Frame:
        func = closure.func
        if len(args) != len(func.params):
            raise InterpretError(f"{closure.name} takes {len(func.params)} arguments, got {len(args)}", span)
        env = dict(closure.captured)
        scope = dict(closure.sym)
        from .symbolic import Matcher

        matcher = Matcher(scope, span, f"calling {closure.name}")
        for p, a in zip(func.params, args):
            env[p] = a
            matcher.what = f"argument {p.name_hint!r} of {closure.name}"
            matcher.span = getattr(p, "span", None) or span
            matcher.match(p.struct_info, a)
        matcher.finish()
        return _Frame(plan_of(func.body, self._plans), env, scope, closure.name, func.ret_struct_info)

    def _packed(self, symbol: str, args: list, span) -> Any:
        fn = self.packed.get(symbol)
        if fn is not None:
            return fn(*args)
        target = self._offloaded.get(symbol)
        if target is not None:
            func = getattr(target, "func", target)
            if isinstance(func, Function):
                return _Push(self._enter(Closure(func, symbol), args, span))
            if callable(func):
                return func(*args)
        name = symbol if symbol in self.mod else self._by_symbol.get(symbol)
        if name is not None and isinstance(self.mod[name], Function):
            return _Push(self._enter(Closure(self.mod[name], name), args, span))
        raise InterpretError(
            f"no implementation of the external function {symbol!r}", span,
            notes=(("RunCodegen keeps the functions it replaced in the module it returns; a module "
                   "read back from text has lost them, so interpret the partitioned module instead"),))

    def _call_dps_packed(self, frame: _Frame, call: Call) -> Any:
        func = self._eval(frame, call.args[0])
        args = self._eval(frame, call.args[1])
        symbol = func.symbol if isinstance(func, PackedFunc) else func if isinstance(func, str) else None
        if symbol is None:
            if isinstance(func, Closure):
                return _Push(self._enter(func, list(args), call.span))
            raise InterpretError(f"R.call_dps_packed of a {describe(func)}", call.span)
        return self._packed(symbol, list(args), call.span)

    def _call_tir(self, frame: _Frame, call: Call) -> Any:
        name = call.args[0].name_hint if isinstance(call.args[0], GlobalVar) else None
        if name is not None and name in self.packed:
            args = list(self._eval(frame, call.args[1]))
            return self.packed[name](*args)
        norm = self._standard_tir(name)
        if norm is not None:  # byocc's own lowering of R.nn.rms_norm (byocc/transform/rms_norm_tir.py)
            from byocc.ops.evaluate import reference_of

            x, w = self._eval(frame, call.args[1])
            rms_norm = reference_of("relax.nn.rms_norm")
            assert rms_norm is not None
            return rms_norm(x, w, axes=[-1], epsilon=norm.eps)
        raise UnsupportedError(f"R.call_tir to {name!r}: TIR functions cannot be interpreted; "
                               "pass an implementation with packed=", call.span)

    def _standard_tir(self, name: str | None):
        """The shape, dtype and epsilon of member ``name`` when it is a standard-form rms_norm
        prim_func (:func:`byocc.ir.rms_norm_tir.standard_rms_norm`), else None."""
        from byocc.ir.tir import PrimFunc

        func = self.mod[name] if name is not None and name in self.mod else None
        if not isinstance(func, PrimFunc):
            return None
        from byocc.ir.rms_norm_tir import standard_rms_norm

        return standard_rms_norm(func)

    def _alloc_tensor(self, frame: _Frame, call: Call) -> Any:
        from byocc.ops.reference import np_dtype

        shape = self._eval(frame, call.args[0])
        return array_module().zeros(tuple(shape), dtype=np_dtype(self._eval(frame, call.args[1])))

    def _apply_op(self, frame: _Frame, call: Call) -> Any:
        entry = self._op_cache.get(id(call))
        if entry is None or entry[0] is not call:
            entry = (call, bound_reference(call))
            self._op_cache[id(call)] = entry
        fn = entry[1]
        env = frame.env
        operands = []
        consts = self._constants
        for a in call.args:
            t = type(a)
            if (t is DataflowVar or t is Var) and a in env:
                operands.append(env[a])
            elif t is Constant and a.data is not None:
                operands.append(a.data if consts is None else consts[a])
            else:
                operands.append(_operand(self._eval(frame, a)))
        out = fn(*operands)
        if type(out) is array_module().ndarray and type(call.struct_info) is TensorStructInfo:
            return out
        return _result(out, call.struct_info)


class _Inline:
    """A pseudo-binding so a nested (non-normal-form) expression runs through ``_step``."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value


def _operand(value: Any) -> Any:
    if isinstance(value, ShapeValue):
        return tuple(value)
    if isinstance(value, tuple):
        return [_operand(v) for v in value]
    return value


def _result(value: Any, si) -> Any:
    if isinstance(si, ShapeStructInfo):
        return ShapeValue(int(d) for d in value)
    if isinstance(si, TupleStructInfo) or isinstance(value, (list, tuple)):
        fields = si.fields if isinstance(si, TupleStructInfo) else (None,) * len(value)
        return tuple(_result(v, f) for v, f in zip(value, fields))
    if isinstance(si, TensorStructInfo) or is_host_array(value):
        return array_module().asarray(value)
    return value


def _truth(cond: Any) -> bool:
    if isinstance(cond, array_module().ndarray) or is_host_array(cond):
        if cond.size != 1:
            raise InterpretError(f"an If condition must be a scalar, got {describe(cond)}")
        return bool(cond.reshape(()))
    return bool(cond)


def _with_context(err: ByoccError, frame: _Frame, binding) -> ByoccError:
    """Add where the error happened (function and binding) as a note, once."""
    if getattr(err, "_byocc_located", False):
        return err
    var = getattr(binding, "var", None)
    if var is not None:
        note = f"while computing {var.name_hint!r} in {frame.name}"
        err.notes = tuple(err.notes) + (note,)
        if err.span is None:
            err.span = getattr(binding, "span", None) or getattr(binding.value, "span", None)
    err._byocc_located = True  # type: ignore[attr-defined]
    return err


def run_module(mod: IRModule, args: Sequence[Any] = (), entry: str = "main",
               packed: Mapping[str, Callable[..., Any]] | None = None, check: bool = False) -> Any:
    """Interpret ``mod[entry]`` on ``args``; shorthand for ``Interpreter(mod).run(...)``."""
    return Interpreter(mod, packed=packed, check=check).run(args, entry)


__all__ = ["Interpreter", "run_module"]
