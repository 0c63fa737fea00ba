"""``tvm.script.ir_builder.relax``: build a Relax function statement by statement.

The names TVMScript's ``R`` also exports (``R.func_name``, ``R.arg``, ``R.emit``,
``R.dataflow``, ``R.output``, ``R.func_ret_value``...)::

    with IRBuilder() as builder:
        with relax_builder.function():
            R.func_name("main")
            x = R.arg("x", R.Tensor((4, 8), "float16"))
            with R.dataflow() as frame:
                y = R.emit(relax.op.nn.relu(x))
                R.output(y)
            R.func_ret_value(frame.output_vars[0])
    func = builder.get()

Each function frame builds through its own :class:`~byocc.relax.BlockBuilder`, so struct
info is inferred and nested calls are bound first exactly as the builder does (``gv``,
``gv1``... outside dataflow blocks, ``lv``, ``lv1``... inside). As in TVM, ``R.output``
turns the given dataflow variables into ordinary variables of the same name (the block's
``output_vars``), and a named function that is not ``is_private`` gets
``global_symbol = name``.
"""

from __future__ import annotations

from typing import Any

from byocc.ir import DataflowVar
from byocc.ir import Expr
from byocc.ir import ExprMutator
from byocc.ir import Function
from byocc.ir import InputError
from byocc.ir import StructInfo
from byocc.ir import Var
from byocc.ir import VarBinding
from byocc.ir.struct_info import is_base_of
from byocc.relax.block_builder import BlockBuilder

from .base import IRBuilder
from .base import IRBuilderFrame


def to_struct_info(value: Any, what: str) -> StructInfo:
    """``value`` as struct info: a StructInfo, or an object with ``as_struct_info()``
    (a TVMScript annotation such as ``R.Tensor((4, 8), "float16")``)."""
    if isinstance(value, StructInfo):
        return value
    convert = getattr(value, "as_struct_info", None)
    if callable(convert):
        sinfo = convert()
        if isinstance(sinfo, StructInfo):
            return sinfo
    raise InputError(f"{what}: expected struct info such as R.Tensor((4, 8), \"float16\"), "
                     f"got {type(value).__name__}: {value!r}")


class FunctionFrame(IRBuilderFrame):
    """``with relax_builder.function():``: one Relax function; builds a Function."""

    def __init__(self, is_pure: bool = True, is_private: bool = False):
        super().__init__()
        self.is_pure = is_pure
        self.is_private = is_private
        self.name: str | None = None
        self.attrs: dict[str, Any] = {}
        self.params: list[Var] = []
        self.ret_struct_info: StructInfo | None = None
        self.output: Expr | None = None
        self.block_builder = BlockBuilder()
        # dataflow variables given to R.output -> the ordinary variables replacing them
        self.outputs: dict[Var, Var] = {}
        self.renames: dict[Var, str] = {}  # IRBuilder.name
        self._scope: Any = None

    def __enter__(self) -> FunctionFrame:  # noqa: PYI034  (Self needs Python 3.11)
        if IRBuilder.current().find_frame(FunctionFrame) is not None:
            raise InputError("relax_builder.function() frames cannot be nested: close the "
                             "enclosing function first (or build inner functions separately)")
        super().__enter__()
        # private: the builder adds no global_symbol; finish() adds it from func_name
        self._scope = self.block_builder.function("main", None, private=True, pure=self.is_pure)
        self._scope.__enter__()
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc_type is not None:
            self._scope.__exit__(exc_type, exc, tb)
        super().__exit__(exc_type, exc, tb)

    def finish(self) -> Function:
        if self.output is None:
            self._scope.__exit__(InputError, None, None)
            raise InputError("a Relax function needs a return value: call "
                             "R.func_ret_value(...) before leaving relax_builder.function()")
        if isinstance(self.output, Var) and self.output in self.outputs:
            self._scope.__exit__(InputError, None, None)
            raise InputError(f"R.func_ret_value: '{self.output.name_hint}' is a dataflow variable "
                             "used outside its dataflow block; return the block's "
                             "frame.output_vars[i] instead")
        bb = self.block_builder
        gv = bb.emit_func_output(self.output, self.params)
        self._scope.__exit__(None, None, None)
        func = bb.get()[gv.name_hint]
        assert isinstance(func, Function)
        remap = self._remap()
        if remap:
            func = _RemapVars(remap).visit_expr(func)  # type: ignore[assignment]
        attrs = dict(func.attrs)
        attrs.update(self.attrs)
        if self.name is not None and not self.is_private:
            attrs["global_symbol"] = self.name
        ret = self.ret_struct_info if self.ret_struct_info is not None else func.ret_struct_info
        return Function(func.params, func.body, ret, func.is_pure, attrs, func.span)

    def rename(self, var: Any, name: str) -> None:
        """``IRBuilder.name(name, var)``: applied when the function is built."""
        if not isinstance(var, Var):
            raise InputError(f"IRBuilder.name: expected a relax variable, got {type(var).__name__}")
        self.renames[var] = name

    def _remap(self) -> dict[Var, Expr]:
        """Old variable -> its replacement: a dataflow block's output becomes its ordinary
        variable; a renamed one (naming a dataflow output names its ordinary variable too,
        the last name given wins) a copy under the new name."""
        names: dict[Var, str] = {}
        for var, name in self.renames.items():
            names[self.outputs.get(var, var)] = name
        remap: dict[Var, Expr] = dict(self.outputs)
        for base, name in names.items():
            if name != base.name_hint:
                remap[base] = type(base)(name, base.struct_info, base.span)
        for old, out in self.outputs.items():
            remap[old] = remap.get(out, out)
        return remap


class DataflowFrame(IRBuilderFrame):
    """``with R.dataflow() as frame:``: one dataflow block; ``frame.output_vars`` holds the
    variables given to :func:`output`, as ordinary variables."""

    def __init__(self) -> None:
        super().__init__()
        self.output_vars: tuple[Var, ...] = ()
        self.emitted: set[Var] = set()
        self.ended = False
        self._function: FunctionFrame | None = None
        self._scope: Any = None

    def __enter__(self) -> DataflowFrame:  # noqa: PYI034  (Self needs Python 3.11)
        builder = IRBuilder.current()
        if builder.find_frame(DataflowFrame) is not None:
            raise InputError("R.dataflow() blocks cannot be nested")
        function = builder.find_frame(FunctionFrame)
        if function is None:
            raise InputError("R.dataflow() must be inside a relax_builder.function() frame")
        _check_open(function, "R.dataflow()")
        super().__enter__()
        self._function = function
        self._scope = function.block_builder.dataflow()
        self._scope.__enter__()
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        self._scope.__exit__(exc_type, exc, tb)
        super().__exit__(exc_type, exc, tb)


def _check_open(function: FunctionFrame, what: str) -> None:
    if function.output is not None:
        raise InputError(f"{what} after R.func_ret_value: the return value must be the "
                         "function's last statement")


def _function_frame(what: str) -> FunctionFrame:
    frame = IRBuilder.current().find_frame(FunctionFrame)
    if frame is None:
        raise InputError(f"{what} must be called inside a relax_builder.function() frame")
    return frame


def _emitting_frame(what: str) -> FunctionFrame:
    """The function frame to emit into, after checking that a binding may go here."""
    function = _function_frame(what)
    _check_open(function, what)
    block = IRBuilder.current().find_frame(DataflowFrame)
    if block is not None and block.ended:
        raise InputError(f"{what}: no new binding is allowed after the dataflow block's R.output")
    return function


def _record(var: Var) -> Var:
    block = IRBuilder.current().find_frame(DataflowFrame)
    if block is not None:
        block.emitted.add(var)
    return var


class _RemapVars(ExprMutator):
    """Replaces variables at their definitions and at every use."""

    def __init__(self, remap: dict[Var, Expr]):
        super().__init__()
        self.var_remap.update(remap)

    def visit_var_def(self, var: Var) -> Var:
        new = self.var_remap.get(var, var)
        return new if isinstance(new, Var) else var


# ---------------------------------------------------------------------- frames
def function(is_pure: bool = True, is_private: bool = False) -> FunctionFrame:
    """A frame building one Relax function (``pure=False`` / private as in TVMScript)."""
    return FunctionFrame(is_pure, is_private)


def dataflow() -> DataflowFrame:
    """A frame building one dataflow block."""
    return DataflowFrame()


# ---------------------------------------------------------------------- function header
def func_name(name: str) -> None:
    """Name the function (a public function's ``global_symbol``)."""
    frame = _function_frame("R.func_name")
    if not isinstance(name, str) or not name:
        raise InputError(f"R.func_name: expected a non-empty string, got {name!r}")
    if frame.name is not None:
        raise InputError(f"R.func_name: the function is already named '{frame.name}'")
    frame.name = name


def func_attr(attrs: dict) -> None:
    """Add function attributes (``R.func_attr({"num_input": 1})``)."""
    frame = _function_frame("R.func_attr")
    if not isinstance(attrs, dict):
        raise InputError(f"R.func_attr: expected a dict, got {type(attrs).__name__}")
    frame.attrs.update(attrs)


def func_ret_struct_info(ret_sinfo: Any) -> None:
    """Declare the return type (the body's type refines it when more precise)."""
    _function_frame("R.func_ret_struct_info").ret_struct_info = to_struct_info(
        ret_sinfo, "R.func_ret_struct_info")


func_ret_ty = func_ret_type = func_ret_struct_info  # TVM 0.27's names


def arg(name: str, struct_info: Any) -> Var:
    """Add a parameter ``name`` of type ``struct_info``; returns its variable."""
    frame = _function_frame("R.arg")
    if not isinstance(name, str) or not name:
        raise InputError(f"R.arg: the name must be a non-empty string, got {name!r}")
    var = Var(name, to_struct_info(struct_info, f"R.arg('{name}')"))
    frame.params.append(var)
    return var


def func_ret_value(value: Expr) -> None:
    """Set the function's return value (bound first when it is not a leaf)."""
    frame = _function_frame("R.func_ret_value")
    if frame.output is not None:
        raise InputError("R.func_ret_value was already called: a Relax function has one return value")
    if IRBuilder.current().find_frame(DataflowFrame) is not None:
        raise InputError("R.func_ret_value must come after the `with R.dataflow()` block is closed")
    if not isinstance(value, (Expr, list, tuple)):
        raise InputError(f"R.func_ret_value: expected a relax expression, got {type(value).__name__}")
    frame.output = value  # type: ignore[assignment]


# ---------------------------------------------------------------------- bindings
def emit(value: Expr, annotate_struct_info: Any = None) -> Var:
    """Bind ``value`` (normalised) to a new variable; with ``annotate_struct_info`` the
    variable gets that (less precise) type."""
    frame = _emitting_frame("R.emit")
    bb = frame.block_builder
    if annotate_struct_info is None:
        return _record(bb.emit(value))
    sinfo = to_struct_info(annotate_struct_info, "R.emit")
    if not isinstance(value, Expr):
        raise InputError(f"R.emit: expected a relax expression, got {type(value).__name__}")
    normalized = bb.normalize(value)
    if normalized.struct_info is not None and not is_base_of(sinfo, normalized.struct_info):
        raise InputError(f"R.emit: the annotation {sinfo} does not describe the value's type "
                         f"{normalized.struct_info}")
    dataflow_block = bb.current_block_is_dataflow()
    name = bb.get_unique_name("lv" if dataflow_block else "gv")
    var = DataflowVar(name, sinfo) if dataflow_block else Var(name, sinfo)
    bb.emit_normalized(VarBinding(var, normalized))
    return _record(var)


emit_with_ty = emit_with_type = emit  # TVM 0.27's names


def emit_match_cast(value: Expr, struct_info: Any) -> Var:
    """Emit ``var = R.match_cast(value, struct_info)``; returns ``var``."""
    frame = _emitting_frame("R.emit_match_cast")
    sinfo = to_struct_info(struct_info, "R.emit_match_cast")
    return _record(frame.block_builder.match_cast(value, sinfo))


def emit_var_binding(value: VarBinding) -> Var:
    """Append an already built binding; returns its variable."""
    frame = _emitting_frame("R.emit_var_binding")
    if not isinstance(value, VarBinding):
        raise InputError(f"R.emit_var_binding: expected a VarBinding, got {type(value).__name__}")
    frame.block_builder.emit_normalized(value)
    return _record(value.var)


def output(*vars: Var) -> None:
    """End the dataflow block: ``vars`` (emitted in it) become its outputs."""
    builder = IRBuilder.current()
    block = builder.find_frame(DataflowFrame)
    if block is None or builder._frames[-1] is not block:
        raise InputError("R.output must be called inside a `with R.dataflow()` block")
    function = block._function
    assert function is not None
    new_vars = []
    for v in vars:
        if not isinstance(v, Var) or v not in block.emitted:
            shown = v.name_hint if isinstance(v, Var) else repr(v)
            raise InputError(f"R.output: '{shown}' was not emitted in this dataflow block")
        new = Var(function.renames.get(v, v.name_hint), v.struct_info, v.span)
        function.outputs[v] = new
        new_vars.append(new)
    block.output_vars += tuple(new_vars)
    block.ended = True


def __getattr__(name: str) -> Any:
    """The op constructors (``add``, ``matmul``, ``nn``, ``call_dps_packed``...), as TVM's
    builder module holds them beside the statements (loaded on first use)."""
    if not name.startswith("__"):
        from byocc.relax import op as _op

        value = getattr(_op, name, None)
        if value is not None:
            globals()[name] = value
            return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "DataflowFrame", "FunctionFrame", "arg", "dataflow", "emit", "emit_match_cast",
    "emit_var_binding", "emit_with_ty", "emit_with_type", "func_attr", "func_name",
    "func_ret_struct_info", "func_ret_ty", "func_ret_type", "func_ret_value", "function", "output",
    "to_struct_info",
]
