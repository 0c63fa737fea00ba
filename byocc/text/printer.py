"""TVMScript printer: byocc IR -> the text Apache TVM 0.27's ``script()`` prints, byte for byte.

The rules are docs/textual-ir.md (all of it but the Parsing section). The printer mirrors the
shape of TVM's own: a stack of *frames* (module, function, sequence) that own the names
defined in them and collect hoisted statements (``cls = Module``, ``m = T.int64()``, free
variable declarations), a set of header prefixes used so far, and metadata tables. It
builds a list of lines; bindings are printed in a loop, never by recursion, so a function
of 100 000 bindings prints (recursion is bounded by expression and function nesting).

Public API::

    print_module(mod, *, pep695=False) -> str     # == mod.script()
    print_function(func, name=None, *, pep695=False) -> str
    print_expr(obj) -> str                         # short form, for __str__ / debugging
"""

from __future__ import annotations

from collections.abc import Iterable
from collections.abc import Mapping
from typing import TYPE_CHECKING
from typing import Any
from typing import cast

from byocc.ir import Binding
from byocc.ir import BindingBlock
from byocc.ir import Call
from byocc.ir import DataflowBlock
from byocc.ir import DataflowVar
from byocc.ir import ExternFunc
from byocc.ir import Function
from byocc.ir import If
from byocc.ir import InternalError
from byocc.ir import IRModule
from byocc.ir import MatchCast
from byocc.ir import Op
from byocc.ir import PrimBinary
from byocc.ir import PrimStructInfo
from byocc.ir import PrimValue
from byocc.ir import SeqExpr
from byocc.ir import StructInfo
from byocc.ir import TensorStructInfo
from byocc.ir import TirVar
from byocc.ir import TupleStructInfo
from byocc.ir import Var
from byocc.ir.tir import PrimFunc

from ._print_expr import ExprPrinterMixin
from ._print_expr import dps_out_sinfo
from ._print_format import NameTable
from ._print_format import quote_string
from ._print_format import sanitize_name
from ._print_types import TypePrinterMixin

if TYPE_CHECKING:
    from byocc.ir import Expr
    from byocc.ir.module import BaseFunc

__all__ = ["print_expr", "print_function", "print_module"]

_FOOTER = "# Metadata omitted. Use show_meta=True in script() method to show it."
_RESERVED = ("I", "T", "R", "cls")
_HIDE_ANN_OPS = ("relax.call_tir", "relax.call_dps_packed")
_MODULE, _FUNC, _SEQ = 0, 1, 2


class _Frame:
    """A printing scope. ``indent`` is the indentation of the statements it collects."""

    __slots__ = (
        "cls_printed",
        "func_vars",
        "indent",
        "kind",
        "owned",
        "stmts",
        "type_var_set",
        "type_vars",
    )

    def __init__(self, kind: int, indent: str) -> None:
        self.kind = kind
        self.indent = indent
        self.stmts: list[str] = []
        self.owned: list[object] = []
        # the TirVars first seen in the signature, while printing it
        self.func_vars: set[TirVar] | None = None
        self.type_vars: list[TirVar] = []
        self.type_var_set: set[TirVar] = set()
        self.cls_printed = False


_COMPARISONS = frozenset(("<", ">", "<=", ">=", "==", "!="))


def _is_void(e: Expr) -> bool:
    si = getattr(e, "struct_info", None)
    return type(si) is TupleStructInfo and not si.fields


class _Printer(TypePrinterMixin, ExprPrinterMixin):
    def __init__(self, pep695: bool = False, module: IRModule | None = None) -> None:
        self.pep695 = pep695
        self.usage: set[str] = set()  # "type_var", "ir", "tirx", "relax", "future"
        self.table = NameTable(_RESERVED)
        self.names: dict[object, str] = {}  # Var / TirVar -> printed name (identity keys)
        self.frames: list[_Frame] = []
        self.sig_frame: _Frame | None = None  # the function whose signature is being printed
        self.module_names = set(module.names()) if module is not None else None
        self.meta: dict[str, dict[object, int]] = {}  # key -> {identity or value: index}
        self._meta_keep: list[object] = []
        self._static_sinfo: dict[TensorStructInfo, str] = {}
        self._init_expr_table()

    # ------------------------------------------------------------------ frames and names
    def push(self, kind: int, indent: str) -> _Frame:
        f = _Frame(kind, indent)
        self.frames.append(f)
        return f

    def pop(self) -> _Frame:
        f = self.frames.pop()
        names, table = self.names, self.table
        for obj in f.owned:
            table.release(names.pop(obj))
        return f

    def define(self, obj: object, frame: _Frame, hint: str) -> str:
        name = self.names.get(obj)
        if name is not None:  # defined twice (ill-formed input): TVM reuses the first name
            return name
        name = self.table.take(sanitize_name(hint))
        self.names[obj] = name
        frame.owned.append(obj)
        return name

    def func_frame(self) -> _Frame | None:
        """The innermost function frame, else the innermost frame (TVM's GetRelaxFrame)."""
        for f in reversed(self.frames):
            if f.kind == _FUNC:
                return f
        return self.frames[-1] if self.frames else None

    def tir_var(self, v: TirVar) -> str:
        name = self.names.get(v)
        if name is not None:
            return name
        f = self.func_frame()
        if f is None:
            f = self.push(_SEQ, "")
        func_vars = f.func_vars  # not None while the signature is printed
        if func_vars is not None:
            func_vars.add(v)
            f.type_vars.append(v)
            f.type_var_set.add(v)
        name = self.define(v, f, v.name)
        if func_vars is None:
            self.usage.add("tirx")
            f.stmts.append(f"{f.indent}{name} = T.{v.dtype}()")
        return name

    def metadata_ref(self, key: str, obj: object, by_value: bool = False) -> str:
        table = self.meta.setdefault(key, {})
        ident = obj if by_value else id(obj)
        index = table.get(ident)
        if index is None:
            index = table[ident] = len(table)
            self._meta_keep.append(obj)
        return f'metadata["{key}"][{index}]'

    def header(self, indent: str) -> list[str]:
        """The header comment block as it stands now, then the indentation-only line."""
        u = self.usage
        out: list[str] = []
        if "type_var" in u:
            out.append(indent + "# from typing import TypeVar")
        if "ir" in u:
            out.append(indent + "# from tvm.script import ir as I")
        if "tirx" in u:
            out.append(indent + "# from tvm.script import tirx as T")
            out.append(indent + "# from tvm.tirx.layout import Axis")
        if "relax" in u:
            out.append(indent + "# from tvm.script import relax as R")
        if out:
            out.append(indent)
        return out

    # ------------------------------------------------------------------ bindings
    def type_ann(self, var: Var, value: Expr) -> str | None:
        si = var.struct_info
        if si is None:
            return None
        if type(value) is Call and type(value.op) is Op and value.op.name in _HIDE_ANN_OPS:
            if dps_out_sinfo(value) == si:
                return None
        return self.sinfo(si)

    def bindings(self, bindings: Iterable[Binding], indent: str, lines: list[str], outputs: list[str] | None) -> None:
        expr, rhs, define, type_ann = self.expr, self.rhs, self.define, self.type_ann
        seq_frame = self.frames[-1]
        append = lines.append
        for b in bindings:
            var = b.var
            value = b.value
            if type(b) is MatchCast:
                ann = type_ann(var, value)
                text = self._relax("match_cast") + f"({expr(value)}, {self.sinfo(b.struct_info)})"
                name = define(var, seq_frame, var.name_hint)
                append(f"{indent}{name}: {ann} = {text}" if ann else f"{indent}{name} = {text}")
            elif type(value) is Function or isinstance(value, Function):
                name = define(var, seq_frame, var.name_hint)
                lines.extend(self.local_function(value, name, indent))
            elif type(value) is If or isinstance(value, If):
                self._if_binding(var, value, indent, lines)
            else:
                vsi = var.struct_info
                if type(vsi) is TupleStructInfo and not vsi.fields and _is_void(value):
                    append(indent + expr(value))
                else:
                    text = rhs(value)
                    ann = type_ann(var, value)
                    if ann is None and type(vsi) is PrimStructInfo:
                        ann = self.sinfo(vsi)
                    name = define(var, seq_frame, var.name_hint)
                    append(f"{indent}{name}: {ann} = {text}" if ann else f"{indent}{name} = {text}")
            if outputs is not None and not isinstance(var, DataflowVar):
                outputs.append(expr(var))

    def _if_binding(self, var: Var, value: If, indent: str, lines: list[str]) -> None:
        ann = self.type_ann(var, value)
        if ann is None and type(var.struct_info) is PrimStructInfo:
            ann = self.sinfo(var.struct_info)
        name = self.define(var, self.frames[-1], var.name_hint)
        lhs = f"{name}: {ann} = " if ann else f"{name} = "
        c = value.cond
        if type(c) is PrimValue and type(c.value) is PrimBinary and c.value.op in _COMPARISONS:
            cond = self.dim(c.value)[0]  # ``if N == 16:``, TVM's spelling of a PrimExpr condition
        else:
            cond = self.expr(c)
        inner = indent + "    "
        then_lines = self.seq(value.true_branch, inner, lhs)
        else_lines = self.seq(value.false_branch, inner, lhs)
        lines.append(f"{indent}if {cond}:")
        lines.extend(then_lines)
        lines.append(f"{indent}else:")
        lines.extend(else_lines)

    def seq(self, body: Expr, indent: str, ret_prefix: str) -> list[str]:
        """A sequence expression's statements, ending ``return X`` (or ``lhs = X``)."""
        frame = self.push(_SEQ, indent)
        stmts = frame.stmts
        blocks: tuple[BindingBlock, ...] = ()
        if isinstance(body, SeqExpr):
            blocks, result = body.blocks, body.body
        else:
            result = body
        for block in blocks:
            if isinstance(block, DataflowBlock):
                inner = indent + "    "
                lines = [indent + "with " + self._relax("dataflow") + "():"]
                outputs: list[str] = []
                self.bindings(block.bindings, inner, lines, outputs)
                lines.append(inner + self._relax("output") + "(" + ", ".join(outputs) + ")")
            else:
                lines = []
                self.bindings(block.bindings, indent, lines, None)
            stmts.extend(lines)
        if ret_prefix == "return ":
            stmts.append(indent + "return " + self.expr(result))
        else:
            stmts.append(indent + ret_prefix + self.rhs(result))
        self.pop()
        return stmts

    # ------------------------------------------------------------------ functions
    def function(self, func: Function, name: str, indent: str, top_level: bool
                 ) -> tuple[list[str], list[str], list[str]]:
        """Print one function. Returns ``(type_var_names, type_var_lines, def_lines)``;
        ``def_lines`` end with the empty line TVM prints after a function body."""
        body_indent = indent + "    "
        frame = self.push(_FUNC, body_indent)
        frame.func_vars = set()
        self.sig_frame = frame
        params: list[str] = []
        for p in func.params:
            ann = self.sinfo(p.struct_info) if p.struct_info is not None else None
            pname = self.define(p, frame, p.name_hint)
            params.append(f"{pname}: {ann}" if ann is not None else pname)
        ret = self.sinfo(func.ret_struct_info) if func.ret_struct_info is not None else None
        self.sig_frame = None
        frame.func_vars = None
        attrs = func.attrs
        if top_level and attrs.get("global_symbol") == name:
            attrs = {k: v for k, v in attrs.items() if k != "global_symbol"}
        if attrs:
            frame.stmts.append(body_indent + self._relax("func_attr") + "(" + self.dict_doc(attrs) + ")")
        decorator = self._relax("function")
        kws: list[str] = []
        if not func.is_pure:
            kws.append("pure=False")
        if top_level and "global_symbol" not in func.attrs:
            kws.append("private=True")
        if kws:
            decorator += "(" + ", ".join(kws) + ")"
        frame.stmts.extend(self.seq(func.body, body_indent, "return "))
        tv_names = sorted(self.names[v] for v in frame.type_vars)
        self.pop()
        type_params = ""
        tv_lines: list[str] = []
        if tv_names:
            if self.pep695:
                self.usage.add("future")
                type_params = "[" + ", ".join(tv_names) + "]"
            else:
                self.usage.add("type_var")
                tv_indent = "" if top_level else indent
                tv_lines = [f"{tv_indent}{n} = TypeVar({quote_string(n)})" for n in tv_names]
        ret_text = f" -> {ret}" if ret is not None else ""
        lines = [f"{indent}@{decorator}", f"{indent}def {name}{type_params}({', '.join(params)}){ret_text}:"]
        lines.extend(frame.stmts or [body_indent + "pass"])
        lines.append("")
        return tv_names, tv_lines, lines

    def local_function(self, func: Function, name: str, indent: str) -> list[str]:
        _, tv_lines, lines = self.function(func, name, indent, top_level=False)
        return self.header(indent) + tv_lines + lines

    # ------------------------------------------------------------------ module
    def module(self, mod: IRModule) -> str:
        self.push(_MODULE, "    ")
        self.table.take("Module")
        body: list[str] = []
        if mod.attrs:
            self.usage.add("ir")
            body.append("    I.module_attrs(" + self.dict_doc(mod.attrs, module_attrs=True) + ")")
        members = sorted(mod.items(), key=_member_key)
        tv_lines: list[str] = []
        declared: set[str] = set()
        for name, func in members:
            if isinstance(func, Function):
                names, lines, def_lines = self.function(func, name, "    ", top_level=True)
                for n, line in zip(names, lines):
                    if n not in declared:
                        declared.add(n)
                        tv_lines.append(line)
                body.extend(def_lines)
            elif isinstance(func, ExternFunc):
                body.append(f"    {name} = {self._extern_func(func)}")
            elif isinstance(func, PrimFunc):
                # byocc keeps TIR as written (it does not model TIR): the definition as given
                self.usage.add("tirx")
                body.extend("    " + line if line else "" for line in func.source.split("\n"))
                body.append("")  # as after a function body
            else:
                raise InternalError(f"cannot print module member {name!r} of type {type(func).__name__}")
        self.usage.add("ir")
        out = self.header("") + tv_lines + ["@I.ir_module", "class Module:"] + (body or ["    pass"])
        return self.finish(out)

    def finish(self, lines: list[str]) -> str:
        if self.meta:
            lines.append(_FOOTER)
        text = "\n".join(lines)
        if "future" in self.usage:
            text = "from __future__ import annotations\n\n" + text
        text = text.rstrip(" ")
        text = text.removesuffix("\n")
        return text


def _member_key(item: tuple[str, BaseFunc]) -> tuple[int, bytes]:
    name, func = item
    if name == "main":
        rank = 1000
    elif isinstance(func, ExternFunc):
        rank = 2
    elif isinstance(func, Function):
        rank = 3
    else:
        rank = 1  # a TIR PrimFunc
    return rank, name.encode("utf-8")


# ---------------------------------------------------------------------- public API
def print_module(mod: IRModule, *, pep695: bool = False, **_ignored: Any) -> str:
    """``mod.script()``: lines joined by ``\\n``, no final newline."""
    return _Printer(pep695, mod).module(mod)


def print_module_with_metadata(mod: IRModule, *, pep695: bool = False) -> tuple[str, dict[str, list[object]]]:
    """``print_module`` plus what its ``metadata["KEY"][i]`` references stand for:
    ``{KEY: [object for index 0, 1, ...]}`` (constants, runtime modules, strings)."""
    p = _Printer(pep695, mod)
    text = p.module(mod)
    by_id = {id(o): o for o in p._meta_keep}
    meta: dict[str, list[object]] = {}
    for key, table in p.meta.items():
        objs: list[object] = [None] * len(table)
        for ident, index in table.items():
            objs[index] = by_id.get(ident, ident) if isinstance(ident, int) else ident
        meta[key] = objs
    return text, meta


def constant_arrays(meta: Mapping[str, list[object]]) -> dict[str, Any]:
    """The sidecar ``.npz`` content for a ``print_module_with_metadata`` result:
    ``{"KEY/i": array}`` for every printed constant whose value is known."""
    arrays: dict[str, Any] = {}
    for key, objs in meta.items():
        for index, obj in enumerate(objs):
            data = getattr(obj, "data", None)
            if data is not None:
                arrays[f"{key}/{index}"] = data
    return arrays


def print_function(func: Function, name: str | None = None, *, pep695: bool = False) -> str:
    """A function printed on its own (TVM's ``func.script()``): header without the ``ir``
    line, an empty line, then the decorated ``def`` at column 0. ``name`` defaults to the
    function's ``global_symbol``, else ``main``."""
    if name is None:
        sym = func.attrs.get("global_symbol")
        name = sym if isinstance(sym, str) else "main"
    p = _Printer(pep695, None)
    p.push(_SEQ, "")
    _, tv_lines, lines = p.function(func, name, "", top_level=True)
    return p.finish(p.header("") + tv_lines + lines)


def print_expr(obj: object) -> str:
    """Best-effort short text of any IR object (used by ``__str__``)."""
    if isinstance(obj, IRModule):
        return print_module(obj)
    if isinstance(obj, Function):
        return print_function(obj)
    p = _Printer(False, None)
    p.push(_SEQ, "")
    try:
        if isinstance(obj, StructInfo):
            return p.sinfo(obj)
        if isinstance(obj, (MatchCast,)) or hasattr(obj, "var") and hasattr(obj, "value"):
            lines: list[str] = []
            p.bindings([cast(Binding, obj)], "", lines, None)  # a binding, or shaped like one
            return "\n".join(lines)
        return p.expr(obj)  # type: ignore[arg-type]  # not an Expr: InternalError, caught below
    except Exception as e:
        return f"<{type(obj).__name__}: unprintable ({e})>"
