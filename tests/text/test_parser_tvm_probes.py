"""Hand-written inputs (unannotated bindings, nested calls, many operators, symbolic dims,
match_cast, local functions, computed return values) read by TVM 0.27 and printed by it:
byocc must infer the same types, pick the same temporary names (``lv3``, ``gv5``: TVM's
parser draws a name for every statement) and print the same text. The ``*.tvm.relax`` files
were produced by TVM 0.27 (``tvm.script.from_source(text).script()``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from byocc.text import parse_module
from byocc.text import print_module

PROBES = sorted((Path(__file__).parents[1] / "data" / "tvm_probes").glob("*.input.relax"))


@pytest.mark.parametrize("path", PROBES, ids=lambda p: p.name.split(".")[0])
def test_handwritten_input_prints_as_tvm_does(path):
    expected = path.with_name(path.name.replace(".input.", ".tvm.")).read_text().rstrip("\n")
    assert print_module(parse_module(path.read_text(), path.name)) == expected


@pytest.mark.parametrize("path", PROBES, ids=lambda p: p.name.split(".")[0])
def test_tvm_output_round_trips(path):
    tvm_text = path.with_name(path.name.replace(".input.", ".tvm.")).read_text().rstrip("\n")
    assert print_module(parse_module(tvm_text, path.name)) == tvm_text


PARTITIONS = sorted(p for p in (Path(__file__).parents[1] / "data" / "tvm_probes").glob("*.relax")
                    if p.name.count(".") == 4)  # <probe>.<tables>.<path>.<bind>.relax


@pytest.mark.parametrize("expected_path", PARTITIONS, ids=lambda p: p.name)
def test_partition_of_probe_matches_tvm(expected_path):
    """The probes partitioned by TVM 0.27 (fp8 / bf16 / int8 matmuls, dequantize, attention
    with bias and causal masks, strided slices, symbolic dims)."""
    from byocc.backends import get_patterns_with_prefix
    from byocc.transform import partition

    probe, tables, path, bind = expected_path.name.split(".")[:4]
    source = expected_path.with_name(f"{probe}.tvm.relax").read_text()
    patterns = [p for table in tables.split("+") for p in get_patterns_with_prefix(table)]
    out = partition(parse_module(source, probe), patterns, path=path, bind_constants=(bind == "bind"))
    assert print_module(out) == expected_path.read_text().rstrip("\n")
