"""MergeCompositeFunctions' group assignment (spec section 6.1) on small and random graphs.

The random test checks byocc's bitset implementation against a direct transcription of
TVM's algorithm (sets of root groups, relabelled on every merge)."""

from __future__ import annotations

import random
import time

from byocc.ir import Call
from byocc.ir import DataflowBlock
from byocc.ir import DataflowVar
from byocc.ir import Function
from byocc.ir import GlobalVar
from byocc.ir import IRModule
from byocc.ir import Op
from byocc.ir import SeqExpr
from byocc.ir import Var
from byocc.ir import VarBinding
from byocc.ir import tensor
from byocc.ir.well_formed import well_formed
from byocc.text import parse_module
from byocc.text import print_module
from byocc.transform import MergeCompositeFunctions
from byocc.transform import run_codegen
from byocc.transform import stub_codegen
from byocc.transform.merge_composite_functions import assign_groups

T4 = tensor((4, 4), "float32")
HEADER = "# from tvm.script import ir as I\n# from tvm.script import relax as R\n\n@I.ir_module\nclass Module:\n"
TT = 'R.Tensor((4, 4), dtype="float32")'
PAIR = f"R.Tuple({TT}, {TT})"


def composite(name: str, backend: str) -> str:
    return f'''    @R.function(private=True)
    def {name}(x: {TT}, y: {TT}) -> {TT}:
        R.func_attr({{"Composite": "{backend}.{name}", "Primitive": True}})
        with R.dataflow():
            gv: {TT} = R.multiply(x, y)
            R.output(gv)
        return gv

'''


def module(body: str, ret: str = "e", comps=(("mul_a", "A"), ("mul_b", "B")), ret_ty: str = TT) -> str:
    funcs = "".join(composite(n, b) for n, b in comps)
    lines = "\n".join(f"            {line}" for line in body.strip().splitlines())
    return (HEADER + funcs + f"    @R.function\n    def main(x: {TT}, y: {TT}) -> {ret_ty}:\n"
            f"        cls = Module\n        with R.dataflow():\n{lines}\n            R.output({ret})\n"
            f"        return {ret}\n")


def groups_by_name(text: str) -> dict[str, tuple]:
    mod = parse_module(text)
    group_of, backends = assign_groups(mod, mod["main"])
    return {v.name_hint: (g, backends.get(g)) for v, g in group_of.items()}


def test_tuple_literal_and_get_items_join_the_backend_group():
    text = module(f"""
a: {TT} = cls.mul_a(x, y)
b: {TT} = cls.mul_a(a, y)
t: {PAIR} = a, b
c: {TT} = t[0]
d: {TT} = t[1]
e: {TT} = R.add(c, d)""")
    g = groups_by_name(text)
    assert g["a"] == g["b"] == g["t"] == g["c"] == g["d"] and g["a"][1] == "A"
    assert g["e"][1] is None and g["e"][0] != g["a"][0]
    out = MergeCompositeFunctions()(parse_module(text))
    assert well_formed(out) == []
    merged = out["fused_mul_a_mul_a_A"]
    assert [b.var.name_hint for b in merged.body.blocks[0].bindings] == ["gv", "a", "b", "t", "gv", "gv1"]


def test_returned_tuple_is_not_absorbed():
    text = module(f"""
a: {TT} = cls.mul_a(x, y)
b: {TT} = cls.mul_a(a, y)
t: {PAIR} = a, b
c: {TT} = t[0]""", ret="t", ret_ty=PAIR)
    g = groups_by_name(text)
    assert g["a"] == g["b"] and g["t"][1] is None and g["c"][1] is None


def test_parent_depending_on_other_parent_is_not_merged():
    # a (A) -> b (B) -> c (A) uses a and b: merging c into a's group would make a cycle
    text = module(f"""
a: {TT} = cls.mul_a(x, y)
b: {TT} = cls.mul_b(a, y)
e: {TT} = cls.mul_a(a, b)""")
    g = groups_by_name(text)
    assert g["a"][0] != g["e"][0] and g["a"][1] == g["e"][1] == "A"
    out = MergeCompositeFunctions()(parse_module(text))
    assert sorted(out.names()) == ["fused_mul_a_A", "fused_mul_b_B", "main"]
    assert well_formed(out) == []


def test_two_parents_of_one_backend_merge_with_the_call():
    text = module(f"""
a: {TT} = cls.mul_a(x, y)
b: {TT} = cls.mul_a(y, x)
e: {TT} = cls.mul_a(a, b)""")
    g = groups_by_name(text)
    assert g["a"] == g["b"] == g["e"]


# ------------------------------------------------------------------ random graphs vs TVM
class _TvmGroup:
    def __init__(self, backend):
        self.parent = None
        self.backend = backend

    def root(self):
        g = self
        while g.parent is not None:
            g = g.parent
        return g


def reference_groups(nodes):
    """Direct transcription of TVM's CompositeGroupsBuilder for calls of variables.
    ``nodes``: list of (backend or None, [argument indices]); index -1, -2 are parameters."""
    deps: dict = {}
    memo = {-1: _TvmGroup(None), -2: _TvmGroup(None)}
    for i, (backend, args) in enumerate(nodes):
        to_merge = []
        if backend is not None:
            parent_deps = set()
            for a in args:
                parent_deps |= deps.get(memo[a].root(), set())
            for a in args:
                if memo[a].backend == backend and memo[a].root() not in parent_deps:
                    to_merge.append(memo[a])
        if not to_merge:
            group = _TvmGroup(backend)
        else:
            group = to_merge[0]
            for other in to_merge[1:]:
                fr, tr = other.root(), group.root()
                if fr is tr:
                    continue
                fr.parent = tr
                deps.setdefault(tr, set()).update(deps.pop(fr, set()))
                for s in deps.values():
                    if fr in s:
                        s.discard(fr)
                        s.add(tr)
        root = group.root()
        for a in args:
            ar = memo[a].root()
            if ar is root:
                continue
            deps.setdefault(root, set()).add(ar)
            deps[root] |= deps.get(ar, set())
        memo[i] = group
    roots = [memo[i].root() for i in range(len(nodes))]
    ids: dict = {}
    return [ids.setdefault(id(r), len(ids)) for r in roots]


def build(nodes) -> IRModule:
    x, y = Var("x", T4), Var("y", T4)
    funcs = {}
    for backend in ("A", "B"):
        p, q = Var("x", T4), Var("y", T4)
        r = Var("gv", T4)
        funcs[f"mul_{backend}"] = Function(
            (p, q), SeqExpr((DataflowBlock((VarBinding(r, Call(Op.get("relax.multiply", create=True), (p, q), None, (), T4)),)),), r),
            T4, True, {"Composite": f"{backend}.mul", "Primitive": True})
    vals = {-1: x, -2: y}
    bindings = []
    for i, (backend, args) in enumerate(nodes):
        op = GlobalVar(f"mul_{backend}") if backend else Op.get("relax.add", create=True)
        v = DataflowVar(f"v{i}", T4)
        bindings.append(VarBinding(v, Call(op, tuple(vals[a] for a in args), None, (), T4)))
        vals[i] = v
    out = Var("out", T4)
    bindings.append(VarBinding(out, Call(Op.get("relax.nn.relu", create=True), (vals[len(nodes) - 1],), None, (), T4)))
    funcs["main"] = Function((x, y), SeqExpr((DataflowBlock(tuple(bindings)),), out), T4, True,
                             {"global_symbol": "main"})
    return IRModule(funcs)


def random_nodes(rng: random.Random, n: int, live: bool = False):
    """Random calls; with ``live`` every node feeds the next one (no dead code)."""
    nodes = []
    for i in range(n):
        backend = rng.choice(["A", "A", "B", None])
        args = [rng.randrange(-2, i) for _ in range(2)]
        if live and i:
            args[rng.randrange(2)] = i - 1
        nodes.append((backend, args))
    return nodes


def test_bitset_groups_equal_tvm_algorithm_on_random_graphs():
    rng = random.Random(1234)
    for _ in range(150):
        nodes = random_nodes(rng, rng.randrange(2, 40))
        mod = build(nodes)
        group_of, _ = assign_groups(mod, mod["main"])
        main_vars = [b.var for b in mod["main"].body.blocks[0].bindings[:-1]]
        ids: dict = {}
        ours = [ids.setdefault(group_of[v], len(ids)) for v in main_vars]
        assert ours == reference_groups(nodes), nodes


def test_random_graphs_merge_and_codegen_stay_well_formed():
    rng = random.Random(99)
    codegens = {"A": stub_codegen("A"), "B": stub_codegen("B")}
    for _ in range(40):
        mod = build(random_nodes(rng, rng.randrange(2, 30), live=True))
        merged = MergeCompositeFunctions()(mod)
        assert well_formed(merged) == [], print_module(merged)
        final = run_codegen(merged, codegens=codegens)
        assert well_formed(final) == []
        assert final.names() == ["main"]


def test_merge_is_near_linear_on_long_alternating_chain():
    n = 8000
    nodes = [("A" if i % 2 == 0 else None, [i - 1 if i else -1, -2]) for i in range(n)]
    mod = build(nodes)
    start = time.perf_counter()
    out = MergeCompositeFunctions()(mod)
    elapsed = time.perf_counter() - start
    assert elapsed < 20
    # the non-offloaded adds in between keep every call in its own (identical) group
    assert sorted(out.names()) == ["fused_mul_A_A", "main"]
