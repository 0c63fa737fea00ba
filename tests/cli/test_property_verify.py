"""Property: partitioning keeps what a graph computes. Random graphs the cutlass and cublas
tables match are run by the interpreter before and after partitioning (both paths, all four
table orders, bind_constants drawn per graph), and after RunCodegen with stand-in codegens
(whose ``R.call_dps_packed`` runs the function it replaced), on the same random inputs; the
outputs agree within the per-dtype tolerance ``byocc verify`` uses (integers exactly).

200 graphs by default, so 200 per path and table; ``BYOCC_PROPERTY_EXAMPLES`` scales that.
A few graphs also go through ``byocc verify`` itself.
"""

from __future__ import annotations

import os

import click
import numpy as np
from click.testing import CliRunner
from hypothesis import HealthCheck
from hypothesis import given
from hypothesis import note
from hypothesis import settings
from hypothesis import strategies as st
from randgraph import RandomChooser
from randgraph import print_with_constants
from randgraph import random_partition_module
from randgraph import strategy
from randgraph import through_text

from byocc.backends import get_patterns_with_prefix
from byocc.ir import Function
from byocc.runtime import Interpreter
from byocc.runtime import bind_arguments
from byocc.runtime import compare
from byocc.runtime import random_arguments
from byocc.transform import RunCodegen
from byocc.transform import partition
from byocc.transform import stub_codegen

EXAMPLES = int(os.environ.get("BYOCC_PROPERTY_EXAMPLES", "0") or 0)
PATHS = ("annotate", "merge")
TABLES = {"cutlass": ("cutlass",), "cublas": ("cublas",), "cublas+cutlass": ("cublas", "cutlass"),
          "cutlass+cublas": ("cutlass", "cublas")}
PATTERNS = {name: [p for b in backends for p in get_patterns_with_prefix(b)] for name, backends in TABLES.items()}
CODEGENS = {"cutlass": stub_codegen("cutlass"), "cublas": stub_codegen("cublas", per_function=True)}
DIMS = {"n": 3}  # the symbolic batch dim of the generated graphs


def public_functions(mod) -> list[str]:
    return sorted(n for n, f in mod.items() if isinstance(f, Function) and "global_symbol" in f.attrs)


def mismatches(expected: dict, module, inputs: dict) -> list[str]:
    runner = Interpreter(module)
    bad = []
    for name, args in inputs.items():
        for rec in compare(expected[name], runner.run(args, name)):
            if not rec["ok"]:
                bad.append(f"{name} output {rec['index']} {rec['dtype']}{rec['shape']}: max abs "
                           f"{rec['max_abs']:.3g} (rtol/atol {rec['rtol']}/{rec['atol']}) {rec['note']}")
    return bad


@settings(max_examples=max(EXAMPLES, 200), deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                 HealthCheck.large_base_example])
@given(strategy(random_partition_module), st.booleans(), st.integers(0, 2**16))
def test_random_graphs_keep_their_meaning_under_both_paths_and_every_table(mod, bind_constants, seed):
    mod = through_text(mod)  # as read from a file: parameter names made unique by the printer
    note(print_with_constants(mod)[0])
    original = Interpreter(mod)
    inputs, expected = {}, {}
    for name in public_functions(mod):
        inputs[name] = bind_arguments(mod[name], random_arguments(mod[name], seed, DIMS))
        expected[name] = original.run(inputs[name], name)
    for path in PATHS:
        for table, patterns in PATTERNS.items():
            partitioned = partition(mod, patterns, path=path, bind_constants=bind_constants)
            codegen = RunCodegen(codegens=CODEGENS)(partitioned)
            for stage, module in (("partitioned", partitioned), ("codegen", codegen)):
                bad = mismatches(expected, module, inputs)
                assert not bad, f"--path {path} --backend {table} bind_constants={bind_constants} ({stage}): {bad}"


# ----------------------------------------------------------------------------- the CLI
def _cli():
    from byocc.cli.main import ByoccGroup
    from byocc.cli.verify import verify

    @click.group(cls=ByoccGroup)
    def group():
        pass

    group.add_command(verify)
    return group


def test_byocc_verify_passes_on_random_graphs(tmp_path):
    """``byocc verify`` on generated files (with their constants in the sidecar ``.npz``)."""
    cli = _cli()
    checked = 0
    for seed in range(6):
        text, arrays = print_with_constants(random_partition_module(RandomChooser(1000 + seed)))
        model = tmp_path / f"graph{seed}.relax"
        model.write_text(text)
        if arrays:
            np.savez(tmp_path / f"graph{seed}.npz", **arrays)
        for path in PATHS:
            args = ["verify", str(model), "--path", path, "--backend", "cutlass", "--backend", "cublas",
                    "--trials", "2", "--dim", "n=3"]
            result = CliRunner().invoke(cli, args, catch_exceptions=False)
            assert result.exit_code == 0, (text, result.output)
            offloaded = " 0 external functions after" not in result.output
            assert ("ok: the partitioned module computes what the original does" if offloaded else
                    "ok: nothing was offloaded (no pattern matched)") in result.output
            checked += 1
    assert checked == 12
