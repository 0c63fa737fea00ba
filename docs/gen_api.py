"""Generate docs/api.md, the Python API reference, from the facades' docstrings.

Run ``python docs/gen_api.py`` (writes docs/api.md) or ``python docs/gen_api.py --check``
(exit 1 when docs/api.md is stale). tests/api/test_api_docs.py checks that every public name
of the facades appears in docs/api.md.
"""

from __future__ import annotations

import importlib
import inspect
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "api.md"

INTRO = """\
# byocc Python API

byocc mirrors TVM 0.27's Python API for building Relax modules and partitioning them, so a
script written for TVM runs with only its imports changed (`samples/seed_api.py`):

```python
from byocc import relax            # was: import tvm; from tvm import relax
from byocc.relax.dpl.pattern import is_op, wildcard

x = relax.Var("x", relax.TensorStructInfo([10, 10], "float32"))
y = relax.Var("y", relax.TensorStructInfo([10, 10], "float32"))
bb = relax.BlockBuilder()
with bb.function("main", [x, y]):
    with bb.dataflow():
        lv0 = bb.emit(relax.op.multiply(x, y))
        gv = bb.emit_output(lv0)
    bb.emit_func_output(gv)
mod = relax.transform.CanonicalizeBindings()(bb.get())
patterns = [("cutlass.multiply", is_op("relax.multiply")(wildcard(), wildcard()))]
mod = relax.transform.FuseOpsByPattern(patterns, annotate_codegen=True)(mod)
assert relax.analysis.well_formed(mod)
mod.show()                         # prints exactly what TVM 0.27 prints
```

Modules written as text or as decorated classes go through byocc's parser:

```python
from byocc.script import ir as I, relax as R

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4, 4), "float32")):
        with R.dataflow():
            y = R.nn.relu(x)
            R.output(y)
        return y
```

`byocc.relax` and `byocc.script` are facades (top layers, like the CLI): every object they
return is a byocc IR node (`byocc.ir`), every pass is byocc's (`byocc.transform`).
`import byocc.relax` loads only `byocc.ir`; the submodules load on first use.

## Differences from TVM 0.27

- `relax.analysis.well_formed(mod)` returns a bool (TVM 0.27's returns None and raises on
  the first problem; its `check_well_formed` returns the bool, and is offered too).
- Both struct-info spellings exist: `TensorStructInfo` and TVM 0.27's `TensorType`
  (likewise `Tuple`, `Shape`, `Object`, `Prim`, `Func`). They are constructors with TVM's
  defaults (`dtype="float32"`) returning byocc's value-equal nodes; `isinstance` works.
- Symbolic dimensions are `byocc.ir.TirVar("n")` (TVM: `tvm.tir.Var("n", "int64")`); in
  decorated classes and functions, `n = TypeVar("n")` declared in the defining scope works.
- IR nodes and modules are immutable: no `mod["f"] = func`; use
  `mod.with_function("f", func)`.
- `byocc.script.from_source(text)` always returns an IRModule (a stand-alone function
  becomes a module holding it). Decorated objects must be defined in a file, written with
  the `I.`/`R.`/`T.` prefixes.
- `partition_for_cutlass` runs all of TVM's steps (attention rewrites, fusion, workspace)
  and succeeds where TVM 0.27's raises: its workspace step's `KeyError: 'T.float16'`, the
  `TypeError` of every attention chain with a BSH output (byocc rewrites it, permuting a
  multi-head result back as the chain lays it out), and the `TypeError` of a chain whose
  q/k/v check fails (byocc leaves that pattern unapplied). A rewrite that would change a
  value's shape, or drop an `R.repeat` that is not on the head axis, is not made.
- `BlockBuilder`: no `emit_te`/`call_te`; `finalize()` does not rename functions.
- `relax.dpl` has the pattern language, `PatternContext` (graph matching: `match_dfb`),
  `rewrite_call` and `rewrite_bindings`, not `PatternMatchingRewriter` or `R.rewriter`. A
  `rewrite_call` rewriter receives a dict (pattern -> matched expression) and builds its
  result with `relax.op.*`.
- `RunCodegen` finds codegens in byocc's backend records (`byocc.backends.register_codegen`)
  or in its `codegens={backend: fn}` argument, not in TVM's global `relax.ext.<backend>`
  functions. `target_options[backend]` is read through the backend's option schema (`byocc
  list` shows it); keys the schema does not name (TVM's `sm`, `find_first_valid`) are ignored.
"""

# (heading, module, names or None for the module's __all__)
SECTIONS = [
    ("byocc.relax", "byocc.relax", [
        "Var", "DataflowVar", "const", "prim_value", "extern", "StringImm", "ShapeExpr", "Tuple",
        "TupleGetItem", "Call", "Function", "SeqExpr", "BindingBlock", "DataflowBlock",
        "VarBinding", "MatchCast", "TensorStructInfo", "ShapeStructInfo", "TupleStructInfo",
        "ObjectStructInfo", "PrimStructInfo", "FuncStructInfo"]),
    ("byocc.relax.BlockBuilder", "byocc.relax.block_builder", ["BlockBuilder"]),
    ("byocc.relax.transform", "byocc.relax.transform", None),
    ("byocc.relax.analysis", "byocc.relax.analysis", None),
    ("byocc.relax.dpl", "byocc.relax.dpl", ["rewrite_call", "rewrite_bindings", "PatternContext"]),
    ("byocc.relax.dpl.pattern", "byocc.relax.dpl.pattern", None),
    ("byocc.relax.backend (pattern_registry)", "byocc.relax.backend.pattern_registry", None),
    ("byocc.relax.backend.patterns", "byocc.relax.backend.patterns", None),
    ("byocc.relax.backend.utils", "byocc.relax.backend.utils", None),
    ("byocc.relax.backend.cuda.cutlass", "byocc.relax.backend.cuda.cutlass", None),
    ("byocc.relax.backend.cuda.cublas", "byocc.relax.backend.cuda.cublas", None),
    ("byocc.script", "byocc.script", ["from_source"]),
    ("byocc.script.ir", "byocc.script.ir", None),
    ("byocc.script.relax", "byocc.script.relax", ["function"]),
    ("byocc.script.ir_builder", "byocc.script.ir_builder", ["IRBuilder"]),
    ("byocc.script.ir_builder.relax", "byocc.script.ir_builder.relax", [
        "function", "dataflow", "func_name", "func_attr", "func_ret_struct_info", "arg",
        "func_ret_value", "emit", "emit_match_cast", "emit_var_binding", "output"]),
    ("byocc.script.ir_builder.ir", "byocc.script.ir_builder.ir", ["ir_module", "module_attrs"]),
    ("byocc.relax.testing", "byocc.relax.testing", None),
    ("byocc.contrib.cutlass.build", "byocc.contrib.cutlass.build", None),
]

BUILDER_METHODS = [
    "current", "function", "dataflow", "emit", "emit_output", "match_cast", "emit_normalized",
    "emit_func_output", "normalize", "add_func", "update_func", "get", "finalize",
    "get_unique_name", "current_block_is_dataflow", "lookup_binding",
]


def summary(obj) -> str:
    doc = inspect.getdoc(obj) or ""
    return " ".join(doc.split("\n\n")[0].split())


def signature(obj) -> str:
    is_new = isinstance(obj, type) and "__new__" in vars(obj)
    try:
        sig = inspect.signature(obj.__new__ if is_new else obj)
    except (TypeError, ValueError):
        return "(...)"
    hidden = {"self", "span"} | ({"cls"} if is_new else set())
    params = [p.replace(annotation=inspect.Parameter.empty)
              for p in sig.parameters.values() if p.name not in hidden]
    return str(sig.replace(parameters=params, return_annotation=inspect.Signature.empty))


def entry(name: str, obj) -> list[str]:
    if not callable(obj):
        return [f"- `{name}`"]
    line = f"- `{name}{signature(obj)}`"
    text = summary(obj)
    return [line + (f": {text}" if text else "")]


def section(title: str, module_name: str, names) -> list[str]:
    module = importlib.import_module(module_name)
    lines = [f"## {title}", ""]
    doc = summary(module)
    if doc and names is None:
        lines += [doc, ""]
    for name in names if names is not None else module.__all__:
        obj = getattr(module, name)
        if isinstance(obj, type) and name == "BlockBuilder":
            lines += entry("BlockBuilder", obj)
            for meth in BUILDER_METHODS:
                lines += ["  " + e for e in entry(f".{meth}", getattr(obj, meth))]
        else:
            lines += entry(name, obj)
    return lines + [""]


def op_section() -> list[str]:
    from byocc.relax.op._generate import namespace_entries, sub_namespaces

    lines = ["## byocc.relax.op", "",
             ("One constructor per operator of byocc's registry (generated), TVM's names and "
              "signatures; each returns a typed `Call`."), ""]
    for prefix, label in [("relax.", "relax.op")] + [(f"relax.{f}.", f"relax.op.{f}") for f in sub_namespaces()]:
        for name, fn in sorted(namespace_entries(prefix).items()):
            lines.append(f"- `{label}.{name}{inspect.signature(fn)}`")
        lines.append("")
    return lines


def render() -> str:
    lines = [INTRO]
    for title, module_name, names in SECTIONS:
        lines += section(title, module_name, names)
        if module_name == "byocc.relax.block_builder":
            lines += op_section()
    return "\n".join(lines).rstrip("\n") + "\n"


def main(argv: list[str]) -> int:
    sys.path.insert(0, str(ROOT))
    text = render()
    if "--check" in argv:
        if not OUT.exists() or OUT.read_text(encoding="utf-8") != text:
            sys.stderr.write("docs/api.md is stale: run python docs/gen_api.py\n")
            return 1
        return 0
    OUT.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
