"""Relax text -> byocc IR (docs/textual-ir.md#parsing).

Two phases: the Lark LALR parser (:mod:`byocc.text.grammar`) builds a syntax tree
(:mod:`byocc.text.syntax`), then readers give it meaning: :class:`ModuleReader` here for
the file and the module, :class:`~byocc.text._parse_function.FunctionReader` for each
function, with the expression and type readers as mixins.

Public API::

    parse_module(text, source="<string>", constants=None) -> IRModule
    read_file(path) -> IRModule          # "-" is stdin; reads <stem>.npz beside the file

Every error is a located :class:`~byocc.ir.ByoccError` (ParseError, TypeInferenceError,
UnsupportedError); no other exception escapes :func:`parse_module`, whatever the input.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any
from typing import NoReturn
from typing import TypeVar
from typing import cast

from lark.exceptions import LarkError
from lark.exceptions import UnexpectedCharacters
from lark.exceptions import UnexpectedEOF
from lark.exceptions import UnexpectedInput
from lark.exceptions import UnexpectedToken

from byocc.ir import ByoccError
from byocc.ir import ExternFunc
from byocc.ir import Function
from byocc.ir import GlobalVar
from byocc.ir import InputError
from byocc.ir import IRModule
from byocc.ir import MultipleErrors
from byocc.ir import ParseError
from byocc.ir import Span
from byocc.ir import TensorStructInfo
from byocc.ir import UnsupportedError
from byocc.ir.memory import gc_paused
from byocc.ir.tir import PrimFunc

from ._parse_expr import METADATA
from ._parse_expr import MODULE
from ._parse_function import FunctionReader
from ._parse_metadata import MetadataTable
from ._parse_metadata import load_sidecar
from ._parse_types import dotted_name
from ._scope import PythonScope
from ._scope import resolve_dotted_names
from ._tir_text import TirDef
from ._tir_text import cut_prim_funcs
from .grammar import get_driver
from .grammar import get_lark
from .grammar import normalize_source
from .syntax import Assign
from .syntax import CallExpr
from .syntax import ClassDef
from .syntax import DictExpr
from .syntax import ExprStmt
from .syntax import FuncDef
from .syntax import Import
from .syntax import ListExpr
from .syntax import Literal
from .syntax import Name
from .syntax import Neg
from .syntax import Node
from .syntax import Pass
from .syntax import Subscript
from .syntax import SyntaxBuilder
from .syntax import TupleExpr

if TYPE_CHECKING:
    from lark import Lark

    from ._parse_expr import Raw

_N = TypeVar("_N", bound=Node)

__all__ = ["decode_source", "parse_module", "parse_script", "read_file"]


# --------------------------------------------------------------------------- public API
def parse_module(text: str, source: str = "<string>", constants: dict[str, Any] | None = None,
                 sidecar: str | None = None, scope: PythonScope | None = None) -> IRModule:
    """Parse a module (``@I.ir_module class ...``) or one stand-alone ``@R.function``.

    ``constants`` holds the values of ``metadata[...]`` references, keyed
    ``"<metadata key>/<index>"`` (``"ir.GenericConst/0"``); without it such constants have
    ``data=None``. With ``sidecar`` (the name of the file ``constants`` came from) the
    values must fit the text: every referenced constant has its array, of the annotated
    type, and every array is referenced; else one ParseError naming the array's key.
    A stand-alone function becomes a module holding it under its name.

    ``scope`` (a decorated script's Python surroundings, :mod:`byocc.text._scope`) resolves
    the names the text does not define: dotted spellings of the TVMScript namespaces
    (``tvm.script.ir_module``, ``relax.op.add``) and Python values (``R.const(weight)``).
    """
    return _parse(text, source, constants, sidecar, scope)[0]


def parse_script(text: str, source: str = "<string>", scope: PythonScope | None = None) -> IRModule | Function:
    """What TVM's ``tvm.script.from_source`` gives: the IRModule of an ``@I.ir_module``
    class, the Function of one stand-alone ``@R.function`` (see :func:`parse_module`)."""
    mod, standalone = _parse(text, source, None, None, scope)
    if standalone is not None:
        func = mod[standalone]
        assert isinstance(func, Function)  # a stand-alone def is read as a Relax function
        return func
    return mod


def _parse(text: str, source: str, constants: dict[str, Any] | None, sidecar: str | None,
           scope: PythonScope | None) -> tuple[IRModule, str | None]:
    """The module, and the name of its function when the text is one stand-alone def."""
    if not isinstance(text, str):
        raise InputError(f"expected text, got {type(text).__name__}")
    with gc_paused():  # the parse allocates many long-lived objects and no cycles
        return _read(text, source, constants, sidecar, scope)


def _read(text: str, source: str, constants: dict[str, Any] | None, sidecar: str | None,
          scope: PythonScope | None) -> tuple[IRModule, str | None]:
    reader = None
    try:
        tir: list[TirDef] = []
        if scope is not None and "prim_func" in text:
            text, tir = cut_prim_funcs(normalize_source(text))
        elif "prim_func" in text:
            text, tir = _own_prim_funcs(text)
        stmts = parse_syntax(text, source)
        if scope is not None:
            resolve_dotted_names(stmts, scope)
        reader = ModuleReader(source, constants, sidecar, scope)
        reader.tir = tir
        mod = reader.read(stmts)
        reader.metadata.check_unused()
        return mod, reader.standalone
    except ByoccError:
        raise
    except _Stop as stop:
        raise stop.error from None
    except RecursionError:
        raise ParseError("expression nested too deeply", _where(reader, source)) from None
    except Exception as exc:  # noqa: BLE001  (a bug must still surface as a located error)
        raise ParseError(f"cannot read this input (internal error: {type(exc).__name__}: {exc})",
                         _where(reader, source)) from exc


def read_file(path: str) -> IRModule:
    """Parse a ``.relax`` file (``"-"``: standard input), with the constants of the sidecar
    ``<stem>.npz`` beside it, if there is one. OSError propagates (the file is missing...)."""
    if path == "-":
        return parse_module(sys.stdin.read(), "<stdin>")
    p = Path(path)
    text = decode_source(p.read_bytes())
    sidecar = p.with_name(p.stem + ".npz")
    constants = load_sidecar(sidecar)
    try:
        return parse_module(text, str(path), constants, sidecar=str(sidecar) if constants is not None else None)
    except InputError as err:
        if constants is None:
            raise
        raise _blame_sidecar(err, text, str(path), constants, str(sidecar)) from None


def decode_source(data: bytes) -> str:
    """``data`` as UTF-8 text; anything else (a binary file) is one InputError, the same for
    a file and for stdin."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise InputError(f"not UTF-8 text ({err.reason} at byte {err.start}): a binary file? "
                         "A model is Relax text (.relax), or an ONNX model named .onnx") from None


_METADATA_REF = re.compile(r'metadata\["([^"]+)"\]\[(\d+)\]')


def _blame_sidecar(err: InputError, text: str, source: str, constants: dict[str, Any], sidecar: str) -> InputError:
    """``err`` raised with the sidecar's values: if the text alone is fine, the array that
    breaks it (one of those referenced where ``err`` is located) is named."""
    if err.span is None or err.span.source != source or "sidecar" in err.message:
        return err
    try:
        parse_module(text, source, None)
    except ByoccError:
        return err  # the text itself is wrong
    lines = text.split("\n")[err.span.line - 1: max(err.span.end_line, err.span.line)]
    candidates: list[str] = []
    for key, index in _METADATA_REF.findall("\n".join(lines)):
        for k in (f"{key}/{index}", f"ir.GenericConst/{index}", f"relax.expr.Constant/{index}"):
            if k in constants and k not in candidates:
                candidates.append(k)
                break
    for key in candidates:
        try:
            parse_module(text, source, {key: constants[key]})
        except ByoccError:
            arr = constants[key]
            shape = tuple(getattr(arr, "shape", ()))
            dtype = getattr(getattr(arr, "dtype", None), "name", "?")
            return type(err)(f'the array "{key}" in the sidecar {sidecar} (shape {shape}, dtype {dtype}) '
                             f"does not fit the module: {err.message}", err.span, err.notes)
    return type(err)(err.message, err.span, err.notes + (f"the values come from the sidecar {sidecar}; "
                                                         "the module reads without it",))


def _where(reader: ModuleReader | None, source: str) -> Span:
    node = getattr(reader, "where", None)
    if node is not None:
        return Span(source, node.line, node.col, node.end_line, node.end_col)
    return Span(source, 1, 1)


# --------------------------------------------------------------------------- syntax
def parse_syntax(text: str, source: str = "<string>", start: str = "start") -> Any:
    """Syntax tree of ``text`` (the statement list for ``start``, the expression node for
    ``expr``); Lark's errors become one-line located ParseErrors."""
    driver = get_driver(SyntaxBuilder)
    src = normalize_source(text) if start == "start" else text
    try:
        return driver.parse(src, start)
    except ParseError as err:  # from the indenter
        span = err.span
        raise ParseError(err.message, Span(source, span.line, span.column, span.end_line, span.end_column)
                         if span else None) from None
    except UnexpectedInput as err:
        raise _in_prim_func(src, getattr(err, "line", 0), source) or _syntax_error(err, src, source) from None
    except LarkError as err:
        raise ParseError(f"syntax error: {err}", Span(source, 1, 1)) from None


def _own_prim_funcs(text: str) -> tuple[str, list[TirDef]]:
    """A ``.relax`` text's ``@T.prim_func`` members cut out when every one is byocc's own
    standard-form rms_norm (what ``byocc partition --recompose`` writes for cutlass,
    :mod:`byocc.transform.rms_norm_tir`), so byocc reads back what it wrote; else the text
    unchanged (other TIR stays refused: "TIR functions ... are not supported")."""
    from byocc.ir.rms_norm_tir import standard_rms_norm

    cut, tir = cut_prim_funcs(normalize_source(text))
    if tir and all(standard_rms_norm(PrimFunc(t.source)) is not None for t in tir):
        return cut, tir
    return text, []


def _in_prim_func(text: str, line: int, source: str) -> UnsupportedError | None:
    """A syntax error inside an ``@T.prim_func`` (TIR: ``for`` loops, buffers, blocks) is
    reported as what it is: TIR is not supported. None when ``line`` is elsewhere."""
    lines = text.split("\n")
    if not 1 <= line <= len(lines):
        return None
    indent = len(lines[line - 1]) - len(lines[line - 1].lstrip())
    for i in range(line - 1, -1, -1):
        stripped = lines[i].lstrip()
        this = len(lines[i]) - len(stripped)
        if not stripped or stripped.startswith("#") or this >= indent:
            continue
        if not stripped.startswith("def "):
            return None
        j = i - 1
        while j >= 0 and lines[j].lstrip().startswith("@"):
            deco = lines[j].lstrip()
            if deco.startswith("@T.prim_func"):
                col = len(lines[j]) - len(deco) + 2
                end = col + len(deco.split("(")[0]) - 1
                return UnsupportedError("TIR functions (@T.prim_func) are not supported by byocc",
                                        Span(source, j + 1, col, j + 1, end))
            j -= 1
        return None
    return None


_TOKEN_NAMES = {
    "_NL": "end of line", "_INDENT": "an indented block", "_DEDENT": "end of block",
    "$END": "end of input", "NAME": "a name", "NUMBER": "a number", "STRING": "a string",
    "TENSOR_TYPE": "a type",
}


def _describe_expected(names: Iterable[str], lark: Lark) -> list[str]:
    patterns = {t.name: t.pattern for t in lark.terminals}
    out: list[str] = []
    for n in sorted(names):
        if n in _TOKEN_NAMES:
            out.append(_TOKEN_NAMES[n])
        elif n in patterns and patterns[n].type == "str":
            out.append(f"'{patterns[n].value}'")
    return sorted(set(out))


def _syntax_error(err: UnexpectedInput, text: str, source: str) -> ParseError:
    line = getattr(err, "line", None) or 1
    column = getattr(err, "column", None) or 1
    if isinstance(err, UnexpectedCharacters):
        pos = err.pos_in_stream
        ch = text[pos] if pos is not None and 0 <= pos < len(text) else "?"
        what = "an unclosed string" if ch in "\"'" else f"unexpected character {ch!r}"
        return ParseError(what, Span(source, line, column, line, column + 1))
    if isinstance(err, UnexpectedEOF):
        return ParseError("unexpected end of input", Span(source, line, column))
    assert isinstance(err, UnexpectedToken)
    tok = err.token
    ttype = tok.type
    unclosed = ""
    brackets = getattr(err, "open_brackets", None)
    if brackets:
        b = brackets[-1]
        if tok.line != b.line or ttype == "$END" or (ttype == "_DEDENT" and not str(tok)):
            unclosed = f" (the '{b}' at line {b.line}, column {b.column} is never closed)"
    if ttype == "$END" or ttype == "_DEDENT" and not str(tok):
        lines = text.rstrip("\n").count("\n") + 1
        return ParseError("unexpected end of input" + unclosed, Span(source, lines, 1))
    if ttype == "_INDENT":
        found, bare = "an indented line", "indentation"
    elif ttype == "_DEDENT":
        found, bare = "the end of the block", "end of block"
    elif ttype == "_NL":
        found, bare = "the end of the line", "end of line"
    else:
        found = bare = f"'{tok}'"
    expected = _describe_expected(err.expected, get_lark(SyntaxBuilder))
    if 0 < len(expected) <= 3:
        msg = f"expected {' or '.join(expected)} but found {found}"
    else:
        msg = f"unexpected {bare}"
    msg += unclosed
    end_col = (tok.end_column or column + 1) if tok.line == tok.end_line else column + 1
    return ParseError(msg, Span(source, line, column, line, end_col))


# --------------------------------------------------------------------------- module
class ModuleReader:
    """Reads a file's top-level statements: the module (or the one function)."""

    def __init__(self, source: str, constants: dict[str, Any] | None, sidecar: str | None = None,
                 scope: PythonScope | None = None) -> None:
        self.source = source
        #: the Python names around a decorated script (None for text from a file)
        self.scope = scope
        self.metadata = MetadataTable(constants, sidecar)
        self.static_tensor_cache: dict[str, TensorStructInfo] = {}
        self.class_names: set[str] = set()
        self.typevars: set[str] = set()
        self.members: dict[str, FunctionReader | None] = {}  # None: reserved, signature not read yet
        self.externs: dict[str, ExternFunc] = {}
        self.gvars: dict[str, GlobalVar] = {}
        self.funcs: dict[str, Function] = {}
        self.in_progress: set[str] = set()
        self.attrs: dict[str, Any] = {}
        self.where: Node | None = None
        self._dim_cache: dict[str, Node] = {}
        #: independent problems found so far (a failed statement or member is recorded and
        #: reading goes on, so ``byocc check`` reports every problem, in file order)
        self.errors: list[ByoccError] = []
        self._error_keys: set[tuple[str, str]] = set()
        self.failed: dict[str, ByoccError] = {}
        #: the function's name when the text is one stand-alone ``@R.function``
        self.standalone: str | None = None
        #: the ``@T.prim_func`` members of a script, cut out of the text before parsing
        self.tir: list[TirDef] = []
        self.prim_funcs: dict[str, PrimFunc] = {}
        self.members_line: dict[str, int] = {}

    # ------------------------------------------------------------------ errors
    def span(self, node: Node) -> Span:
        return Span(self.source, node.line, node.col, node.end_line, node.end_col)

    def error(self, message: str, node: Node | None, cls: type[ByoccError] = ParseError) -> NoReturn:
        raise cls(message, self.span(node) if node is not None else Span(self.source, 1, 1))

    def record(self, err: ByoccError) -> None:
        """Keep ``err`` (once) and go on reading; past :data:`MAX_ERRORS` stop."""
        key = (str(err.span), err.message)
        if key in self._error_keys:
            return
        self._error_keys.add(key)
        self.errors.append(err)
        if len(self.errors) >= MAX_ERRORS:
            self.raise_errors(stopped=True)

    def raise_errors(self, stopped: bool = False) -> None:
        """Raise what :meth:`record` kept: one error, or all of them in file order."""
        if not self.errors:
            return
        errors = sorted(self.errors, key=_span_order)
        if stopped:
            last = errors[-1]
            errors[-1] = type(last)(last.message, last.span,
                                    last.notes + (f"stopped after {MAX_ERRORS} errors",))
        error = errors[0] if len(errors) == 1 else MultipleErrors(errors)
        if stopped:
            raise _Stop(error)  # not a ByoccError: no handler on the way up records it again
        raise error

    # ------------------------------------------------------------------ top level
    def read(self, stmts: list[Node]) -> IRModule:
        main: ClassDef | FuncDef | None = None
        for stmt in stmts:
            self.where = stmt
            if isinstance(stmt, (Import, Pass)) or _is_docstring(stmt):
                continue
            if isinstance(stmt, Assign) and _is_typevar(stmt):
                self.typevars.add(stmt.target.id)
                continue
            if isinstance(stmt, (ClassDef, FuncDef)):
                if main is not None:
                    self.error("a file holds one module (or one function); this is a second one", stmt)
                main = stmt
                continue
            self.error("unexpected statement at the top level (expected @I.ir_module class or @R.function)",
                       stmt)
        if main is None:
            self.error("no module or function found (expected @I.ir_module class or @R.function)", None)
        if isinstance(main, FuncDef):
            reader = FunctionReader(self, main, member=True)
            name = main.name.id
            self.standalone = name
            self.members[name] = reader
            try:
                self._read_member(name)
            except ByoccError as err:
                self.record(err)
            self.raise_errors()
            return IRModule({self.gvars[name]: self.funcs[name]})
        return self._read_class(main)

    def _read_class(self, node: ClassDef) -> IRModule:
        if len(node.decorators) != 1 or dotted_name(_decorator_callee(node.decorators[0])) != "I.ir_module":
            self.error("a module class needs the @I.ir_module decorator", node)
        self._ir_module_options(node.decorators[0])
        self.class_names.add(node.name.id)
        order: list[str] = []
        funcdefs: list[FuncDef] = []
        for stmt in node.body:
            self.where = stmt
            if isinstance(stmt, Pass) or _is_docstring(stmt):
                continue
            if isinstance(stmt, Assign) and _is_typevar(stmt):
                self.typevars.add(stmt.target.id)
                continue
            if isinstance(stmt, FuncDef):
                self._check_new_member(stmt.name)
                funcdefs.append(stmt)
                order.append(stmt.name.id)
                self.members_line[stmt.name.id] = stmt.line
                self.members[stmt.name.id] = None  # reserved; read below
                continue
            if isinstance(stmt, Assign) and stmt.annotation is None:
                ext = self._extern_member(stmt)
                self._check_new_member(stmt.target)
                self.externs[stmt.target.id] = ext
                self.gvars[stmt.target.id] = GlobalVar(stmt.target.id, ext.struct_info, ext.span)
                order.append(stmt.target.id)
                self.members_line[stmt.target.id] = stmt.line
                continue
            if (isinstance(stmt, ExprStmt) and isinstance(stmt.value, CallExpr)
                    and dotted_name(stmt.value.func) == "I.module_attrs"):
                self._module_attrs(stmt.value)
                continue
            self.error("unexpected statement in the module (expected functions, NAME = R.ExternFunc(...) "
                       "or I.module_attrs(...))", stmt)
        lines = {name: self.members_line.get(name, 0) for name in order}
        for t in self.tir:
            if t.name in lines:
                self.error(f"the module already has a member named '{t.name}'", None)
            self.prim_funcs[t.name] = PrimFunc(t.source, {} if t.private else {"global_symbol": t.name},
                                               span=Span(self.source, t.line, t.col))
            self.gvars[t.name] = GlobalVar(t.name, self.prim_funcs[t.name].struct_info)
            lines[t.name] = t.line
        order = sorted(lines, key=lines.__getitem__)
        # signatures first, so calls can be typed whatever the order of definition
        for fd in funcdefs:
            self.where = fd
            reader = FunctionReader(self, fd, member=True)
            self.members[fd.name.id] = reader
            sig = reader.signature()
            if sig is not None:
                self.gvars[fd.name.id] = GlobalVar(fd.name.id, sig, reader.span(fd.name))
        for fd in funcdefs:
            try:
                self._read_member(fd.name.id)
            except ByoccError as err:
                self.record(err)  # the next member is independent of this one
        self.raise_errors()
        functions: dict[GlobalVar, Function | ExternFunc | PrimFunc] = {}
        for name in order:
            functions[self.gvars[name]] = (self.funcs[name] if name in self.funcs else self.externs[name]
                                           if name in self.externs else self.prim_funcs[name])
        # a PrimFunc member is a module function too (IRModule's BaseFunc predates it)
        return IRModule(cast("dict[GlobalVar, Function | ExternFunc]", functions), attrs=self.attrs)

    def _ir_module_options(self, deco: Node) -> None:
        """``@I.ir_module(check_well_formed=..., s_tir=...)``: TVM's keyword options, each
        True or False (neither changes what byocc reads)."""
        if not isinstance(deco, CallExpr):
            return
        if deco.args:
            self.error("@I.ir_module takes keyword arguments only (check_well_formed=, s_tir=)", deco.args[0])
        for kw in deco.kwargs:
            if kw.name not in ("check_well_formed", "s_tir"):
                self.error(f"@I.ir_module got an unexpected argument '{kw.name}'", kw)
            if not isinstance(kw.value, Literal) or not isinstance(kw.value.value, bool):
                self.error(f"{kw.name} must be True or False", kw.value)

    def _check_new_member(self, name: Name) -> None:
        if name.id in self.members or name.id in self.externs:
            self.error(f"the module already has a member named '{name.id}'", name)

    def _extern_member(self, stmt: Assign) -> ExternFunc:
        value = stmt.value
        if not isinstance(value, CallExpr) or dotted_name(value.func) != "R.ExternFunc":
            self.error("expected NAME = R.ExternFunc(\"symbol\") in the module", value)
        if (len(value.args) != 1 or value.kwargs or not isinstance(value.args[0], Literal)
                or not isinstance(value.args[0].value, str)):
            self.error("R.ExternFunc takes the symbol name as a string", value)
        return ExternFunc(value.args[0].value, span=self.span(value))

    def _module_attrs(self, call: CallExpr) -> None:
        if len(call.args) != 1 or call.kwargs or not isinstance(call.args[0], DictExpr):
            self.error("I.module_attrs takes one dictionary", call)
        attrs = self.read_attr_dict(call.args[0], None)
        for key in attrs:
            if not isinstance(key, str):
                self.error("module attribute names must be strings", call.args[0])
        self.attrs.update(attrs)

    # ------------------------------------------------------------------ members
    def _read_member(self, name: str) -> None:
        if name in self.funcs:
            return
        if name in self.failed:
            raise self.failed[name]
        reader = self.members[name]
        assert reader is not None, name  # callers read members whose signature is known
        self.in_progress.add(name)
        saved = self.where
        try:
            func = reader.read()
        except ByoccError as err:
            self.where = saved
            self.in_progress.discard(name)
            self.failed[name] = err
            raise
        self.where = saved
        self.in_progress.discard(name)
        self.funcs[name] = func
        if name not in self.gvars:
            self.gvars[name] = GlobalVar(name, func.struct_info, reader.span(reader.node.name))

    def global_var(self, name: str, node: Node) -> GlobalVar:
        """The GlobalVar of member ``name`` (``cls.name``)."""
        gv = self.gvars.get(name)
        if gv is not None:
            return gv
        if self.members.get(name) is None:
            if name in self.members:  # a member whose signature is still being read
                self.error(f"'{name}' is used before its signature is known", node)
            self.error(f"the module has no function '{name}'", node)
        if name in self.in_progress:
            self.error(f"'{name}' calls itself (or is called back) before its return type is known; "
                       "annotate its return type", node)
        self._read_member(name)
        return self.gvars[name]

    # ------------------------------------------------------------------ shared helpers
    def parse_dim_text(self, text: str, node: Node) -> Node:
        """A quoted dimension (``"n * 2"``) parsed as an expression; positions are relative
        to the string's content (the caller moves them)."""
        cached = self._dim_cache.get(text)
        if cached is not None:
            return _copy_tree(cached)
        try:
            tree = parse_syntax(text, self.source, start="expr")
        except ParseError as err:
            raise ParseError(f"in the quoted dimension \"{text}\": {err.message}", self.span(node)) from None
        self._dim_cache[text] = tree
        return _copy_tree(tree)

    def read_attr_value(self, node: Node, func_reader: FunctionReader | None) -> Raw:
        """A dictionary/attribute value: Python literals, lists (as tuples), dictionaries and
        metadata references."""
        if type(node) is Literal:
            return node.value
        if type(node) is Neg:
            v = self.read_attr_value(node.operand, func_reader)
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                return -v
            self.error("expected a number after '-'", node)
        if type(node) is ListExpr or type(node) is TupleExpr:
            return tuple(self.read_attr_value(e, func_reader) for e in node.elts)
        if type(node) is DictExpr:
            return self.read_attr_dict(node, func_reader)
        if type(node) is Subscript:
            inner = node.value
            if (isinstance(inner, Subscript) and isinstance(inner.value, Name) and inner.value.id == "metadata"
                    and len(inner.indices) == 1 and isinstance(inner.indices[0], Literal)
                    and isinstance(inner.indices[0].value, str) and len(node.indices) == 1
                    and isinstance(node.indices[0], Literal) and type(node.indices[0].value) is int):
                return self.metadata.lookup(inner.indices[0].value, node.indices[0].value, self.span(node))
        if func_reader is not None:
            v = func_reader.evaluate(node)
            if v is not MODULE and v is not METADATA:
                return v
        self.error("expected a literal value (string, number, True/False, None, list or dictionary)", node)

    def read_attr_dict(self, node: DictExpr, func_reader: FunctionReader | None) -> dict[Any, Raw]:
        """A dictionary of attribute values (see :meth:`read_attr_value`)."""
        out: dict[Any, Raw] = {}
        for k, v in node.pairs:
            key = self.read_attr_value(k, func_reader)
            if isinstance(key, (tuple, dict)):
                self.error("dictionary keys must be strings or numbers", k)
            out[key] = self.read_attr_value(v, func_reader)
        return out


#: ``byocc check`` reports at most this many problems of one file.
MAX_ERRORS = 20


class _Stop(Exception):
    """Reading stopped at :data:`MAX_ERRORS`; ``error`` is what :func:`parse_module` raises."""

    def __init__(self, error: ByoccError) -> None:
        super().__init__(error.message)
        self.error = error


def _span_order(err: ByoccError) -> tuple[int, int]:
    span = err.span
    return (0, 0) if span is None else (span.line, span.column)


def _is_docstring(stmt: Node) -> bool:
    return isinstance(stmt, ExprStmt) and isinstance(stmt.value, Literal) and isinstance(stmt.value.value, str)


def _is_typevar(stmt: Assign) -> bool:
    v = stmt.value
    return (isinstance(v, CallExpr) and isinstance(v.func, Name) and v.func.id == "TypeVar"
            and stmt.annotation is None)


def _decorator_callee(node: Node) -> Node:
    return node.func if isinstance(node, CallExpr) else node


def _copy_tree(node: _N) -> _N:
    """A deep copy of a small syntax tree (quoted dims are relocated in place)."""
    import copy

    return copy.deepcopy(node)
