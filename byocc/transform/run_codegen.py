"""RunCodegen (docs/partitioning.md#runcodegen) and how it finds a backend's codegen.

``RunCodegen(target_options=None, entry_functions=None)``:

1. Entry functions: the given names, then every public Relax function without ``Codegen`` in
   *descending* name order (TVM's order).
2. In each entry function every call ``f(args)`` of a global ``f`` carrying ``Codegen`` becomes
   ``R.call_dps_packed("<f's C symbol>", (args...), out_ty=<the call's type>)``;
   ``f`` loses ``global_symbol`` and ``Codegen`` (private and unreferenced afterwards). The
   C symbol is the global symbol itself when it is a usable C identifier, else its short form
   (:func:`~byocc.transform.c_symbols.export_symbols` over every ``Codegen`` function of the
   module: a merged function's name can run to thousands of characters). The constants inside
   ``f`` are named ``<global_symbol>_<backend>_const_<k>`` (``k`` from 0 per function,
   post-order).
3. Every function of the *input* module carrying ``Codegen`` (top-level or nested) is handed,
   grouped by backend (backends in order of first appearance, functions by global name), to
   the backend's codegen: ``fn(functions, options, constant_names)`` where ``functions`` is a
   list of ``(C symbol, Function)`` (the function keeps its ``global_symbol``, the Relax
   name), ``options`` is ``target_options[backend]`` (or ``{}``) and
   ``constant_names`` maps each named :class:`~byocc.ir.Constant` to its name; during the
   call :func:`codegen_module` is the input module (a codegen reads the ``@T.prim_func`` a
   ``call_tir`` inside a composite names from it, e.g. its text). It returns a
   list of runtime-module-like objects (``is_runtime_module = True``, e.g.
   :class:`CodegenModule`); a backend without a codegen is a :class:`PassError`.
4. Module attributes: ``external_mods`` = existing list + the returned modules (if any);
   ``const_name_to_constant`` = ``{name: Constant}`` (if any constant was named).
   ``mod.extras["offloaded"]`` maps each symbol to its offloaded function (for interpreters).
5. DeadCodeElimination with the given entry functions.

The codegen of a backend is the ``codegens={backend: fn}`` argument's, else the one the
installed lookup finds (:func:`set_codegen_lookup`). This layer keeps no registry of its
own: ``byocc.backends`` installs the lookup over its backend records when it is imported
(``byocc.backends.register_codegen`` sets a record's codegen), as TVM's RunCodegen looks
``relax.ext.<backend>`` up in a registry the backends fill.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field
from typing import Any
from typing import ClassVar
from typing import cast

from byocc.ir import Call
from byocc.ir import Constant
from byocc.ir import Expr
from byocc.ir import ExprMutator
from byocc.ir import ExternFunc
from byocc.ir import Function
from byocc.ir import GlobalVar
from byocc.ir import IRModule
from byocc.ir import Op
from byocc.ir import PassError
from byocc.ir import Span
from byocc.ir import StructInfo
from byocc.ir import Tuple
from byocc.ir import TupleStructInfo
from byocc.ir import sinfo_of
from byocc.ir.analysis import all_global_vars
from byocc.ir.analysis import post_order_visit

from .c_symbols import export_symbols
from .dead_code_elimination import dead_code_elimination
from .dead_code_elimination import is_public
from .pass_manager import Pass

#: ``fn(functions, options, constant_names) -> runtime modules``: ``functions`` are
#: ``(C symbol, Function)`` pairs (None for a nested function without a global symbol).
CodegenFn = Callable[[list[tuple[Any, Function]], dict[str, Any], dict[Constant, str]], Any]
#: ``lookup(backend) -> codegen or None``: how RunCodegen finds a backend's codegen.
CodegenLookup = Callable[[str], "CodegenFn | None"]

_lookup: CodegenLookup | None = None

#: The module whose ``Codegen`` functions are being handed to a codegen (None outside).
_MODULE: contextvars.ContextVar[IRModule | None] = contextvars.ContextVar("byocc_codegen_module", default=None)


def codegen_module() -> IRModule | None:
    """Inside a codegen called by RunCodegen: the module RunCodegen was given (its
    ``@T.prim_func`` members included, which the ``functions`` handed over only name through
    GlobalVars); None outside such a call."""
    return _MODULE.get()


def set_codegen_lookup(lookup: CodegenLookup | None) -> CodegenLookup | None:
    """Install how RunCodegen finds the codegen of a backend its ``codegens`` argument does
    not name (``byocc.backends`` installs its records' lookup); returns the previous one."""
    global _lookup
    previous, _lookup = _lookup, lookup
    return previous


def find_codegen(backend: str, codegens: Mapping[str, CodegenFn] | None = None) -> CodegenFn:
    """The codegen of ``backend``: ``codegens``'s, else the installed lookup's;
    :class:`PassError` if there is none."""
    fn = (codegens or {}).get(backend)
    if fn is None and _lookup is not None:
        fn = _lookup(backend)
    if fn is None:
        raise PassError(f"no codegen registered for backend '{backend}'")
    return fn


@dataclass(frozen=True)
class CodegenModule:
    """A runtime-module stand-in: what a codegen produced for some external symbols.

    ``sources`` maps a file name to its text (empty for stand-ins); printed as
    ``metadata["ffi.Module"][i]`` in ``external_mods``.
    """

    backend: str
    symbols: tuple[str, ...]
    sources: tuple[tuple[str, str], ...] = ()
    kind: str = "cc"

    is_runtime_module: ClassVar[bool] = True


def stub_codegen(backend: str, per_function: bool = False) -> CodegenFn:
    """A codegen that produces no code: one :class:`CodegenModule` for all the functions of a
    call, or one per function (``per_function``, like TVM's cuBLAS). Used for the golden
    tests and for backends that only need partitioning."""

    def codegen(functions: list[tuple[Any, Function]], options: dict[str, Any],
                constant_names: dict[Constant, str]) -> list[CodegenModule]:
        symbols = [sym for sym, _ in functions]
        if per_function:
            return [CodegenModule(backend, (s,), ((f"{s}.cc", f"// {s}\n"),)) for s in symbols]
        return [CodegenModule(backend, tuple(symbols), (("module.cc", "// " + ",".join(symbols) + "\n"),))]

    return codegen


def _ext_symbol(name: str, func: Function) -> str:
    sym = func.attrs.get("global_symbol")
    if not isinstance(sym, str):
        raise PassError(f"RunCodegen: function '{name}' has a Codegen attribute but no global_symbol",
                        func.span)
    return sym


def call_dps_packed(symbol: str, args: Sequence[Expr], out_ty: StructInfo, span: Span | None = None) -> Call:
    """``R.call_dps_packed("symbol", (args...), out_ty=out_ty)`` as TVM builds it: one
    ``sinfo_args`` entry (a tuple type for several outputs)."""
    arg_tuple = Tuple(tuple(args), TupleStructInfo(tuple(sinfo_of(a) for a in args)))
    op = Op.get("relax.call_dps_packed", create=True)
    return Call(op, (ExternFunc(symbol), arg_tuple), None, (out_ty,), out_ty, span)


class _CallRewriter(ExprMutator):
    def __init__(self, runner: _Runner) -> None:
        super().__init__()
        self.runner = runner

    def visit_call_(self, e: Call) -> Expr:
        new = cast(Call, super().visit_call_(e))  # e, or e with new arguments
        op = e.op
        if isinstance(op, GlobalVar):
            sym = self.runner.extern_symbol(op.name_hint)
            if sym is not None:
                return call_dps_packed(sym, new.args, sinfo_of(e), e.span)
        return new


class _Runner:
    def __init__(self, mod: IRModule, exports: dict[str, str]) -> None:
        self.original = mod
        self.mod = mod
        self.exports = exports                  # global symbol -> C symbol
        self.externs: dict[str, str] = {}       # global name -> C symbol
        self.constant_names: dict[Constant, str] = {}
        self.offloaded: dict[str, Function] = {}

    def extern_symbol(self, name: str) -> str | None:
        if name in self.externs:
            return self.externs[name]
        if name not in self.mod:
            return None
        func = self.mod[name]
        if not isinstance(func, Function) or "Codegen" not in func.attrs:
            return None
        backend = func.attrs["Codegen"]
        sym = _ext_symbol(name, func)
        count = 0

        def name_constant(e: Expr) -> None:
            nonlocal count
            if isinstance(e, Constant):
                self.constant_names[e] = f"{sym}_{backend}_const_{count}"
                count += 1

        post_order_visit(func.body, name_constant)
        sym = self.exports.get(sym, sym)
        self.externs[name] = sym
        self.offloaded[sym] = func
        stripped = func.with_attrs(global_symbol=None, Codegen=None)
        self.mod = self.mod.with_function(name, stripped, self.mod.get_global_var(name))
        return sym


def _functions_in(func: Function) -> list[Function]:
    """``func`` and the functions nested in it, in post-order."""
    found: list[Function] = []

    def collect(e: Expr) -> None:
        if isinstance(e, Function):
            found.append(e)

    post_order_visit(func, collect)
    return found


def _codegen_functions(mod: IRModule) -> dict[str, list[tuple[Any, Function]]]:
    """Every function carrying ``Codegen`` (top-level or nested), by backend, with its global
    symbol (None for a nested function without one)."""
    by_backend: dict[str, list[tuple[Any, Function]]] = {}
    for name in sorted(mod.names()):
        func = mod[name]
        if not isinstance(func, Function):
            continue
        for f in _functions_in(func):
            backend = f.attrs.get("Codegen")
            if isinstance(backend, str):
                sym = f.attrs.get("global_symbol", name if f is func else None)
                by_backend.setdefault(backend, []).append((sym, f))
    return by_backend


def _exports(functions: dict[str, list[tuple[Any, Function]]]) -> dict[str, str]:
    """Global symbol -> C symbol for every ``Codegen`` function of the module (all backends:
    they link into one library)."""
    return export_symbols(sym for funcs in functions.values() for sym, _ in funcs if isinstance(sym, str))


def run_codegen(mod: IRModule, target_options: Mapping[str, Mapping[str, Any]] | None = None,
                entry_functions: Sequence[str] = (),
                codegens: Mapping[str, CodegenFn] | None = None) -> IRModule:
    """Functional form of :class:`RunCodegen`; ``codegens`` overrides the lookup per backend."""
    functions = _codegen_functions(mod)
    exports = _exports(functions)
    runner = _Runner(mod, exports)
    entries: list[str] = []
    for name in entry_functions:
        if name not in mod:
            raise PassError(f"RunCodegen: entry function '{name}' is not in the module")
        entries.append(name)
    publics = [n for n, f in mod.items()
               if isinstance(f, Function) and is_public(f) and "Codegen" not in f.attrs]
    for name in sorted(publics, reverse=True):
        if name not in entries:
            entries.append(name)
    for name in entries:
        func = runner.mod[name]
        if not isinstance(func, Function):
            continue
        new = _CallRewriter(runner).visit_function_(func)
        if new is not func:
            runner.mod = runner.mod.with_function(name, new, runner.mod.get_global_var(name))

    ext_mods: list[Any] = []
    options = dict(target_options or {})
    for backend, funcs in functions.items():
        try:
            fn = find_codegen(backend, codegens)
        except PassError as exc:
            raise PassError(f"{exc.message} {_offloaded_to(funcs)}; give a codegen with "
                            "byocc.backends.register_codegen, or partition without -o") from None
        exported = [(exports.get(sym, sym) if isinstance(sym, str) else sym, f) for sym, f in funcs]
        token = _MODULE.set(mod)
        try:
            produced = fn(exported, dict(options.get(backend, {})), dict(runner.constant_names))
        finally:
            _MODULE.reset(token)
        for m in produced or ():
            if not getattr(m, "is_runtime_module", False):
                raise PassError(f"the codegen of backend '{backend}' returned {type(m).__name__}, "
                                "not a runtime module")
            ext_mods.append(m)

    out = runner.mod
    attrs = dict(out.attrs)
    if ext_mods:
        attrs["external_mods"] = list(attrs.get("external_mods", [])) + ext_mods
    if runner.constant_names:
        consts: dict[str, Constant] = {}
        for const, cname in runner.constant_names.items():
            if cname in consts:
                raise PassError(f"RunCodegen: more than one constant with the name {cname}")
            consts[cname] = const
        attrs["const_name_to_constant"] = consts
    if attrs != out.attrs:
        out = out.with_attrs(attrs)
    if runner.offloaded:
        out = out.with_extras(offloaded={**out.extras.get("offloaded", {}), **runner.offloaded},
                              offloaded_helpers={**out.extras.get("offloaded_helpers", {}),
                                                 **_helpers_of(runner.offloaded.values(), mod)})
    return dead_code_elimination(out, entries[:len(entry_functions)])


def _offloaded_to(funcs: Sequence[tuple[Any, Function]]) -> str:
    """``(for N function(s): name (composite C), ...)`` of one backend's functions, the first few."""
    items = []
    for sym, f in funcs[:3]:
        composites = sorted({str(c.attrs["Composite"]) for c in _functions_in(f)
                             if c is not f and isinstance(c.attrs.get("Composite"), str)})
        items.append(f"{sym} (composite {', '.join(composites)})" if composites else str(sym))
    more = f", and {len(funcs) - 3} more" if len(funcs) > 3 else ""
    return f"(for {len(funcs)} function{'s' if len(funcs) != 1 else ''}: {', '.join(items)}{more})"


def _helpers_of(functions: Iterable[Function], mod: IRModule) -> dict[str, Function]:
    """The module functions the offloaded ``functions`` call (transitively, by name): DCE
    drops them from the module as TVM does, so an interpreter running an offloaded function
    finds them here (``mod.extras["offloaded_helpers"]``)."""
    found: dict[str, Function] = {}
    work = list(functions)
    while work:
        func = work.pop()
        for gv in all_global_vars(func.body):
            name = gv.name_hint
            if name in found or name not in mod:
                continue
            callee = mod[name]
            if isinstance(callee, Function):
                found[name] = callee
                work.append(callee)
    return found


@dataclass(frozen=True)
class RunCodegen(Pass):
    """Offload every ``Codegen`` function to its backend (module docstring)."""

    target_options: Mapping[str, Mapping[str, Any]] | None = field(default=None, hash=False, compare=False)
    entry_functions: tuple[str, ...] = ()
    codegens: Mapping[str, CodegenFn] | None = field(default=None, hash=False, compare=False)

    name: ClassVar[str] = "RunCodegen"
    opt_level: ClassVar[int] = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "entry_functions", tuple(self.entry_functions or ()))

    def run(self, mod: IRModule) -> IRModule:
        return run_codegen(mod, self.target_options, self.entry_functions, self.codegens)


__all__ = [
    "CodegenFn", "CodegenLookup", "CodegenModule", "RunCodegen", "call_dps_packed", "find_codegen",
    "run_codegen", "set_codegen_lookup", "stub_codegen",
]
