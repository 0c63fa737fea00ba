"""The HTML report and the dot text (issue 12) without a browser: the page's static DOM holds
the elements the module implies, reasons come from --explain, the page is self-contained
and byte-stable, FLOPs are exact, large graphs are split into parts dot lays out once per
shape; the CLI options write through the one writer and fail cleanly without Graphviz.
The browser tests are in test_report_browser.py."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT
from conftest import run_cli
from report_helpers import PageDom
from report_helpers import expected_dom

from byocc.backends import get_backend
from byocc.cli.explain import explain_partition
from byocc.text import read_file
from byocc.transform import partition

SAMPLES = ROOT / "samples"
HAS_DOT = shutil.which("dot") is not None
needs_dot = pytest.mark.skipif(not HAS_DOT, reason="Graphviz's dot is not installed (apt-get install graphviz)")


def _partitioned(sample: str, backends: tuple[str, ...], path: str):
    if sample.endswith(".onnx"):
        from byocc.frontend import from_onnx

        mod = from_onnx(str(SAMPLES / sample))
    else:
        mod = read_file(SAMPLES / sample)
    patterns = [p for b in backends for p in get_backend(b).patterns()]
    part = partition(mod, patterns, path=path)
    return part, explain_partition(mod, part, patterns, path=path)


CASES = [("transformer_block_fp16.relax", ("cutlass",), "merge"),
         ("transformer_block_fp16.relax", ("cutlass",), "annotate"),
         ("transformer_block_fp16.relax", ("cublas",), "merge"),
         ("mlp_fp16.relax", ("cublas", "cutlass"), "annotate"),
         ("small_cnn.onnx", ("cutlass",), "annotate")]


@needs_dot
@pytest.mark.parametrize("sample,backends,path", CASES, ids=lambda v: "-".join(v) if isinstance(v, tuple) else v)
def test_dom_has_the_elements_the_module_implies(sample, backends, path):
    from byocc.cli.report import render_html

    part, report = _partitioned(sample, backends, path)
    dom = PageDom(render_html(part, "t", "", report))
    exp = expected_dom(part)
    for fn, count in exp.bindings.items():
        assert len([a for a in dom.having("data-binding") if a["_section"] == fn]) == count
    calls = dom.having("data-function")
    assert sorted(a["data-function"] for a in calls) == sorted(exp.calls.elements())
    assert {a["data-function"] for a in calls} == set(exp.backend)
    assert all(a["data-backend"] == exp.backend[a["data-function"]] for a in calls)
    assert all("data-binding" in a for a in calls)  # a region is its call's binding
    # one body per offloaded function, drawing every operator of its composites
    assert set(dom.templates) == set(exp.backend)
    for fn, nodes in exp.body.items():
        assert len(dom.having("data-inner-binding", dom.templates[fn])) == nodes
    # every host row of --explain carries its reason, on its binding
    reasons = {(a["_section"], a["data-binding"]): a["data-reason"] for a in dom.having("data-reason")}
    rows = {(r["function"], r["binding"]): r for r in report["host"]}
    assert set(reasons) == set(rows)
    for key, reason in reasons.items():
        assert rows[key]["reason"] in reason


@needs_dot
def test_small_cnn_host_convolutions_say_why():
    from byocc.cli.report import render_html

    part, report = _partitioned("small_cnn.onnx", ("cutlass",), "annotate")
    dom = PageDom(render_html(part, "t", "", report))
    convs = [a for a in dom.having("data-reason") if a.get("data-op") == "relax.nn.conv2d"]
    assert len(convs) == 5  # conv1, the block's two, its projection, the head
    assert all("data_layout NCHW != NHWC" in a["data-reason"] for a in convs)


@needs_dot
def test_show_marks_heavy_host_operators_without_a_table():
    from byocc.cli.report import SHOW_REASON
    from byocc.cli.report import render_html

    mod = read_file(SAMPLES / "transformer_block_fp16.relax")
    dom = PageDom(render_html(mod, "t"))
    heavy = dom.having("data-reason")
    # 8 matmuls and 2 layer norms of the block, none offloaded
    assert sorted(a["data-op"] for a in heavy) == ["relax.matmul"] * 8 + ["relax.nn.layer_norm"] * 2
    assert {a["data-reason"] for a in heavy} == {SHOW_REASON}
    assert dom.having("data-function") == [] and dom.templates == {}


@needs_dot
def test_page_is_self_contained_and_byte_stable():
    from byocc.cli.report import render_html

    part, report = _partitioned("transformer_block_fp16.relax", ("cutlass",), "merge")
    one = render_html(part, "t", "s", report, workers=1)
    two = render_html(part, "t", "s", report, workers=2)
    assert one == two
    assert PageDom(one).urls == []
    for needle in ("http:", "https:", "<link", "@import", "src=", "fetch(", "XMLHttpRequest"):
        assert needle not in one
    assert one.count("url(") == one.count("url(#byocc-arrow)")


def test_flops_are_exact():
    from byocc.cli.report.flops import call_flops
    from byocc.cli.report.flops import format_flops

    conv = read_file(SAMPLES / "conv2d_nhwc_fp16.relax")["main"].body.blocks[0].bindings[0].value
    assert call_flops(conv) == 2 * (1 * 16 * 16 * 64) * (3 * 3 * 32)
    mod = read_file(SAMPLES / "transformer_block_fp16.relax")
    calls = {b.var.name_hint: b.value for blk in mod["main"].body.blocks for b in blk.bindings}
    assert call_flops(calls["q"]) == 2 * 16 * 64 * 64
    assert call_flops(calls["s"]) == 2 * 16 * 16 * 64
    assert call_flops(calls["f1"]) == 2 * 16 * 256 * 64
    assert call_flops(calls["ln1"]) is None
    assert format_flops(8.18e9) == "8.18 GFLOP"


def test_stats_count_work_per_call():
    from byocc.cli.explain import HEAVY_OPS
    from byocc.cli.report.graph import build_graphs
    from byocc.cli.report.stats import compute_stats

    part, report = _partitioned("transformer_block_fp16.relax", ("cublas",), "merge")
    stats = compute_stats(build_graphs(part, report["host"], HEAVY_OPS, ""))
    block = 2 * 16 * 64 * 64 * 4 + 2 * 16 * 16 * 64 * 2 + 2 * 16 * 256 * 64 * 2  # the 8 matmuls
    assert (stats.offloaded_flops, stats.host_flops) == (block, 0)
    assert stats.offloaded_share == 1.0
    assert [(f, b, op) for f, b, op, _ in stats.heavy] == [("main", "ln1", "relax.nn.layer_norm"),
                                                           ("main", "ln2", "relax.nn.layer_norm")]
    assert [(b.backend, b.functions, b.calls) for b in stats.backends] == [("cublas", 3, 3)]


def test_large_graph_parts_are_small_local_and_repeat():
    sys.path.insert(0, str(ROOT / "bench"))
    from genmodel import make_module_text

    from byocc.cli.explain import HEAVY_OPS
    from byocc.cli.report import _job
    from byocc.cli.report.graph import build_graphs
    from byocc.cli.report.parts import MAX_PART
    from byocc.cli.report.parts import REACH
    from byocc.cli.report.parts import shared_params
    from byocc.cli.report.parts import split
    from byocc.text import parse_module

    mod = partition(parse_module(make_module_text(3000, "transformer")), get_backend("cutlass").patterns())
    graph = build_graphs(mod, None, HEAVY_OPS, "").drawn[0]
    parts = split(graph)
    hidden = shared_params(graph)
    assert hidden  # the generator's weights are read by every layer
    own = [i for p in parts for i, copy in zip(p.nodes, p.copies) if not copy]
    assert own == list(range(graph.params, len(graph.nodes)))  # every node once, in order
    for p in parts:
        assert sum(not c for c in p.copies) <= MAX_PART
        for src, dst in p.edges:
            assert not p.copies[dst]
            assert p.nodes[src] in graph.nodes[p.nodes[dst]].inputs
        # every read is drawn, except of the shared weights; no edge reaches further than REACH
        for k, (v, copy) in enumerate(zip(p.nodes, p.copies)):
            if copy:
                continue
            drawn = sorted(p.nodes[s] for s, d in p.edges if d == k)
            assert drawn == sorted(u for u in graph.nodes[v].inputs if u not in hidden)
            for s, d in p.edges:
                if d == k and not p.copies[s]:
                    assert v - p.nodes[s] <= REACH
    texts = {_job(graph, p).dot_text() for p in parts}
    assert len(parts) >= 15 and len(texts) <= 6  # repeated layers: one dot run per shape


# ----------------------------------------------------------------------------- the CLI
@needs_dot
def test_partition_report_beside_stdout(tmp_path):
    sample = SAMPLES / "transformer_block_fp16.relax"
    plain = run_cli("partition", sample, "--backend", "cutlass", "--path", "merge")
    out = tmp_path / "r.html"
    got = run_cli("partition", sample, "--backend", "cutlass", "--path", "merge", "--report", out)
    assert got.exit_code == 0, got.stderr
    assert got.stdout == plain.stdout  # the product is unchanged
    text = out.read_text(encoding="utf-8")
    assert text.startswith("<!DOCTYPE html>") and text.endswith("</html>\n")
    assert "byocc partition: transformer_block_fp16.relax" in text


@needs_dot
def test_partition_report_on_stdout_with_an_output_folder(tmp_path):
    got = run_cli("partition", SAMPLES / "mlp_fp16.relax", "--backend", "cutlass", "-o", tmp_path / "out",
                  "--report", "-")
    assert got.exit_code == 0, got.stderr
    assert got.stdout.startswith("<!DOCTYPE html>")
    assert (tmp_path / "out" / "manifest.json").exists()


def test_report_on_stdout_needs_an_output_folder():
    got = run_cli("partition", SAMPLES / "mlp_fp16.relax", "--backend", "cutlass", "--report", "-")
    assert got.exit_code == 2
    assert "'--report': stdout already holds the partitioned module" in got.stderr


def test_report_never_overwrites_the_input(tmp_path):
    model = tmp_path / "m.relax"
    model.write_text((SAMPLES / "mlp_fp16.relax").read_text())
    got = run_cli("partition", model, "--backend", "cutlass", "--report", model)
    assert got.exit_code == 2
    assert "which byocc never overwrites" in got.stderr
    assert model.read_text() == (SAMPLES / "mlp_fp16.relax").read_text()


@pytest.mark.parametrize("args", [
    ("partition", SAMPLES / "mlp_fp16.relax", "--backend", "cutlass", "--report", "{out}", "-o", "{dir}"),
    ("show", SAMPLES / "mlp_fp16.relax", "--format", "html", "-o", "{out}"),
], ids=["partition", "show"])
def test_without_graphviz_exit_3_and_nothing_written(tmp_path, monkeypatch, args):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    out, folder = tmp_path / "r.html", tmp_path / "out"
    got = run_cli(*(str(a).format(out=out, dir=folder) for a in args))
    assert got.exit_code == 3
    assert got.stderr.startswith("byocc: error: Graphviz's 'dot' was not found on PATH")
    assert got.stderr.count("\n") == 1
    assert not out.exists() and not folder.exists()


def test_show_format_dot_is_graphviz_text(tmp_path):
    part, _ = _partitioned("transformer_block_fp16.relax", ("cutlass",), "merge")
    from byocc.text import print_module

    model = tmp_path / "p.relax"
    model.write_text(print_module(part) + "\n")
    got = run_cli("show", model, "--format", "dot")
    assert got.exit_code == 0, got.stderr
    assert got.stdout.startswith("digraph byocc {")
    exp = expected_dom(part)
    drawn = sum(len(part[f].params) + n + 1 for f, n in exp.bindings.items())
    bodies = sum(len(part[f].params) + n + 1 for f, n in exp.body.items())
    if not HAS_DOT:
        pytest.skip("Graphviz's dot is not installed: the text was not laid out")
    done = subprocess.run(["dot", "-Tjson0"], input=got.stdout.encode(), capture_output=True, check=True)
    objects = json.loads(done.stdout)["objects"]
    assert sum(1 for o in objects if not o["name"].startswith("cluster_")) == drawn + bodies


@needs_dot
def test_show_format_html_writes_through_a_symlink(tmp_path):
    target = tmp_path / "target.html"
    link = tmp_path / "link.html"
    link.symlink_to(target)
    got = run_cli("show", SAMPLES / "conv2d_nhwc_fp16.relax", "--format", "html", "-o", link)
    assert got.exit_code == 0, got.stderr
    assert link.is_symlink() and target.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert got.stdout == ""


def test_show_text_to_a_file_is_the_round_trip(tmp_path):
    out = tmp_path / "s.relax"
    got = run_cli("show", SAMPLES / "mlp_fp16.relax", "-o", out)
    assert got.exit_code == 0, got.stderr
    assert out.read_text() == (SAMPLES / "mlp_fp16.relax").read_text()


def test_shortened_names():
    from byocc.cli.report.labels import MAX_CHARS
    from byocc.cli.report.labels import composite_lines
    from byocc.cli.report.labels import shorten

    long = "fused_relax_nn_conv2d_relax_add_relax_nn_relu" * 20 + "_cutlass"
    short = shorten(long)
    assert len(short) == MAX_CHARS and short.endswith("u_cutlass") and "…" in short
    assert shorten("lv3") == "lv3"
    assert composite_lines(["cutlass.layer_norm", "cutlass.matmul", "cutlass.matmul", "cutlass.matmul"],
                           "cutlass") == ("layer_norm · matmul ×3",)
    many = [f"cutlass.c{i}_{'x' * 20}" for i in range(9)]
    lines = composite_lines(many, "cutlass")
    assert len(lines) == 3 and lines[-1].endswith("more") and all(len(x) <= MAX_CHARS for x in lines)


def test_report_module_is_imported_lazily():
    # byocc --help must not pay for the report (the command modules import it inside)
    code = "import sys, byocc.cli.main; print('byocc.cli.report' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          cwd=Path(ROOT))
    assert done.stdout.strip() == "False"
