"""Exported C symbols: a global symbol that is no usable C identifier (a merged function's
name of hundreds of characters, a keyword, a reserved or crafted name) is exported under a
short, stable, collision-free form; the Relax name is kept, and RunCodegen's
``R.call_dps_packed``, the manifest and the wrapper's file agree on the symbol."""

from __future__ import annotations

import hashlib
import json

import pytest

from byocc.backends.cutlass.codegen import codegen
from byocc.dpl import is_op
from byocc.dpl import wildcard
from byocc.ir import Call
from byocc.ir import ExternFunc
from byocc.ir.analysis import post_order_visit
from byocc.text import parse_module
from byocc.transform import partition
from byocc.transform.c_symbols import MAX_IDENTIFIER
from byocc.transform.c_symbols import export_symbols
from byocc.transform.c_symbols import is_c_identifier
from byocc.transform.c_symbols import short_symbol

LONG = "fused_" + "relax_add_relax_multiply_" * 12 + "cutlass"


def _sha(name: str) -> str:
    return hashlib.sha256(name.encode()).hexdigest()[:16]


@pytest.mark.parametrize("name", ["fused_relax_matmul_cutlass", "a" * MAX_IDENTIFIER, "_x", "main_1"])
def test_a_usable_name_is_its_own_symbol(name):
    assert export_symbols([name]) == {name: name}


def test_the_short_form_is_prefix_and_hash_of_the_full_name():
    assert len(LONG) > MAX_IDENTIFIER
    sym = short_symbol(LONG)
    assert sym == LONG[:60].rstrip("_") + "_" + _sha(LONG)
    assert is_c_identifier(sym) and len(sym) <= 77
    assert export_symbols([LONG]) == {LONG: sym}
    assert short_symbol(LONG) == sym  # stable across calls (no salt, no counter)


@pytest.mark.parametrize("name, prefix", [
    ("int", "int"), ("main", "main"), ("__reserved", "reserved"), ("bad-name", "bad_name"),
    ("1abc", "f_1abc"), ('f"; system("x"); //', "f_system_x"), ("é", "f"), ("a" * 201, "a" * 60)])
def test_unusable_names_get_a_safe_short_form(name, prefix):
    sym = export_symbols([name])[name]
    assert sym == f"{prefix}_{_sha(name)}"
    assert is_c_identifier(sym)


def test_two_long_names_sharing_a_prefix_get_distinct_symbols():
    a, b = LONG, LONG + "1"
    got = export_symbols([a, b])
    assert got[a] != got[b]
    assert got[a][:60] == got[b][:60]
    assert got == export_symbols([b, a])


def test_a_collision_with_another_functions_name_is_resolved_deterministically():
    taken = short_symbol(LONG)  # a usable name that happens to be LONG's short form
    other = LONG + "x"
    clash = short_symbol(other)
    names = [LONG, taken, other, clash, clash + "_2"]
    got = export_symbols(names)
    assert all(got[n] == n for n in (taken, clash, clash + "_2"))  # usable names keep themselves
    assert got[LONG] == taken + "_2"
    assert got[other] == clash + "_3"  # its short form and _2 are other functions' own names
    assert len(set(got.values())) == len(names)
    for order in (names[::-1], names[1:] + names[:1]):
        assert export_symbols(order) == got


# --------------------------------------------------------------------------- end to end
_OPS = ("add", "multiply")
_PATTERNS = [(f"cutlass.{op}", is_op(f"relax.{op}")(wildcard(), wildcard())) for op in _OPS]


def _chain_module(*lengths: int) -> str:
    """Runs of alternating add/multiply ops, one per length, separated by a softmax (which no
    pattern offloads), so that the merge path builds one function per run."""
    lines = ["# from tvm.script import ir as I", "# from tvm.script import relax as R", "",
             "@I.ir_module", "class Module:", "    @R.function",
             '    def main(x: R.Tensor((4, 8), dtype="float32"), y: R.Tensor((4, 8), dtype="float32")):',
             "        with R.dataflow():"]
    prev, k = "x", 0
    for c, n in enumerate(lengths):
        if c:
            lines.append(f'            s{c} = R.nn.softmax({prev}, axis=-1)')
            prev = f"s{c}"
        for i in range(n):
            lines.append(f"            t{k} = R.{_OPS[i % 2]}({prev}, y)")
            prev, k = f"t{k}", k + 1
    lines += [f"            out = R.nn.relu({prev})", "            R.output(out)", "        return out", ""]
    return "\n".join(lines)


def _packed_names(mod) -> list[str]:
    found = []

    def visit(e):
        if isinstance(e, Call) and getattr(e.op, "name", "") == "relax.call_dps_packed":
            callee = e.args[0]
            found.append(callee.global_symbol if isinstance(callee, ExternFunc) else str(callee))

    post_order_visit(mod["main"].body, visit)
    return found


def _merged(*lengths: int):
    mod = parse_module(_chain_module(*lengths))
    originals = partition(mod, _PATTERNS, path="merge")
    names = sorted(f.attrs["global_symbol"] for f in originals.functions.values()
                   if "Codegen" in getattr(f, "attrs", {}))
    out = partition(mod, _PATTERNS, path="merge", run_codegen=True, codegens={"cutlass": codegen})
    [gm] = out.attrs["external_mods"]
    return names, out, gm


def test_a_huge_merged_name_is_generated_under_its_short_symbol():
    names, out, gm = _merged(24)
    [relax_name] = names
    assert len(relax_name) > MAX_IDENTIFIER
    [entry] = gm.entries
    assert entry.symbol == short_symbol(relax_name) and is_c_identifier(entry.symbol)
    assert entry.global_symbol == relax_name
    js = entry.to_json()
    assert js["symbol"] == entry.symbol and js["global_symbol"] == relax_name
    assert entry.source_file == f"src/funcs/{entry.symbol}.cu"
    assert f"int32_t {entry.symbol}(" in js["c_signature"]
    assert _packed_names(out) == [entry.symbol]  # RunCodegen calls what the library exports
    assert set(out.extras["offloaded"]) == {entry.symbol}
    wrapper = next(s.text for s in gm.sources if s.path == entry.source_file)
    assert f"BYOCC_EXPORT int32_t {entry.symbol}(" in wrapper
    assert relax_name not in wrapper


def test_two_long_merged_names_in_one_module_stay_distinct():
    names, out, gm = _merged(24, 25)
    assert len(names) == 2 and all(len(n) > MAX_IDENTIFIER for n in names)
    assert names[0][:60] == names[1][:60]
    symbols = {e.global_symbol: e.symbol for e in gm.entries}
    assert set(symbols) == set(names)
    assert len(set(symbols.values())) == 2
    assert sorted(_packed_names(out)) == sorted(symbols.values())
    assert len({s.path for s in gm.sources if s.path.startswith("src/funcs/")}) == 2


def test_a_usable_name_is_unchanged_and_recorded_as_both():
    names, out, gm = _merged(2)
    [entry] = gm.entries
    assert entry.symbol == names[0] and entry.to_json()["global_symbol"] == names[0]
    assert _packed_names(out) == [names[0]]


def test_partition_output_manifest_records_both(tmp_path):
    from click.testing import CliRunner

    from byocc.cli.main import cli

    model = tmp_path / "chain.relax"
    model.write_text(_chain_module(24))
    patterns = tmp_path / "patterns.py"
    patterns.write_text("patterns = [\n" + "".join(
        f'    ("cutlass.{op}", is_op("relax.{op}")(wildcard(), wildcard())),\n' for op in _OPS) + "]\n")
    res = CliRunner().invoke(cli, ["partition", str(model), "--patterns", str(patterns), "--path", "merge",
                                   "-o", str(tmp_path / "o")])
    assert res.exit_code == 0, res.output
    manifest = json.loads((tmp_path / "o" / "manifest.json").read_text())
    [f] = manifest["functions"]
    assert len(f["global_symbol"]) > MAX_IDENTIFIER and f["symbol"] == short_symbol(f["global_symbol"])
    assert (tmp_path / "o" / "src" / "funcs" / f"{f['symbol']}.cu").is_file()
    codegen_module = (tmp_path / "o" / "chain.codegen.relax").read_text()
    assert f'R.call_dps_packed("{f["symbol"]}", ' in codegen_module
    assert f["global_symbol"] not in codegen_module
