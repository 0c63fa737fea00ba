"""Op references on every axis (issue 9, class 5), against independent float64 formulas.

`layer_norm` over a non-last axis (`axes=[-2]`, `[0]`, `[1]`) broadcast gamma against the
last axis: 202 of the 1 350 conformance partition runs could not be verified. Each
normalisation is checked here for every axes combination its schema allows (positive and
negative spellings, several axes, unsorted lists), against element-by-element loops written
independently of the references. Also: `verify` takes a module's only public function when
there is no `main`, and offloaded functions may call global helpers after RunCodegen.
"""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from byocc.ops import get_op_def

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT.parent / "shared" / "conformance" / "cases"
SHAPE = (2, 3, 4)


def reference(name):
    return get_op_def(name).reference


def axes_spellings(ndim: int):
    """Every non-empty axes list: each subset, in sorted and reversed order, positive and
    negative spellings."""
    for k in range(1, ndim + 1):
        for subset in itertools.combinations(range(ndim), k):
            for order in {subset, tuple(reversed(subset))}:
                yield list(order)
                yield [a - ndim for a in order]


def _normalise_loop(x, axes, stat):
    """For each element, the mean/variance (``stat``) over the elements that share its
    indices outside ``axes``: plain Python loops over indices."""
    ndim = x.ndim
    red = sorted(a % ndim for a in axes)
    out = np.empty(x.shape)
    for idx in np.ndindex(*x.shape):
        group = [x[j] for j in np.ndindex(*x.shape)
                 if all(j[d] == idx[d] for d in range(ndim) if d not in red)]
        out[idx] = stat(np.array(group, dtype=np.float64), float(x[idx]))
    return out


def layer_norm_formula(x, gamma, beta, axes, eps):
    def stat(group, value):
        mean = sum(group) / len(group)
        var = sum((g - mean) ** 2 for g in group) / len(group)
        return (value - mean) / np.sqrt(var + eps)

    out = _normalise_loop(x, axes, stat)
    norm_axes = [a % x.ndim for a in axes]  # gamma[i, j, ...] belongs to data dims axes[0], axes[1], ...
    for idx in np.ndindex(*x.shape):
        key = tuple(idx[a] for a in norm_axes)
        out[idx] = out[idx] * gamma[key] + beta[key]
    return out


def rms_norm_formula(x, weight, axes, eps):
    out = _normalise_loop(x, axes, lambda group, value: value / np.sqrt(sum(g * g for g in group) / len(group) + eps))
    norm_axes = [a % x.ndim for a in axes]
    for idx in np.ndindex(*x.shape):
        out[idx] = out[idx] * weight[tuple(idx[a] for a in norm_axes)]
    return out


@pytest.mark.parametrize("axes", list(axes_spellings(len(SHAPE))), ids=str)
def test_layer_norm_and_rms_norm_on_every_axes_list(axes):
    rng = np.random.default_rng(abs(hash(tuple(axes))) % 2**32)
    x = rng.standard_normal(SHAPE)
    param_shape = tuple(SHAPE[a % len(SHAPE)] for a in axes)
    gamma, beta = rng.standard_normal(param_shape), rng.standard_normal(param_shape)
    got = reference("relax.nn.layer_norm")(x, gamma, beta, axes=axes, epsilon=1e-5, center=True, scale=True)
    np.testing.assert_allclose(got, layer_norm_formula(x, gamma, beta, axes, 1e-5), rtol=1e-10, atol=1e-12)
    got = reference("relax.nn.rms_norm")(x, gamma, axes=axes, epsilon=1e-5)
    np.testing.assert_allclose(got, rms_norm_formula(x, gamma, axes, 1e-5), rtol=1e-10, atol=1e-12)


def test_layer_norm_center_and_scale_flags():
    rng = np.random.default_rng(1)
    x = rng.standard_normal(SHAPE)
    gamma, beta = rng.standard_normal(3), rng.standard_normal(3)
    plain = layer_norm_formula(x, np.ones(3), np.zeros(3), [1], 1e-5)
    f = reference("relax.nn.layer_norm")
    np.testing.assert_allclose(f(x, gamma, beta, axes=[1], center=False, scale=False), plain, rtol=1e-10)
    np.testing.assert_allclose(f(x, gamma, beta, axes=[1], center=False, scale=True),
                               plain * gamma.reshape(1, 3, 1), rtol=1e-10)


@pytest.mark.parametrize("channel_axis, axes", [
    (1, [2, 3]), (1, [2]), (1, [3]), (-3, [-1]), (3, [1, 2]), (0, [2, 3]), (2, [0, 3]), (1, [0, 2, 3]),
])
def test_group_norm_on_every_channel_axis_and_axes(channel_axis, axes):
    shape, groups = (2, 4, 4, 2), 2
    rng = np.random.default_rng(3)
    x = rng.standard_normal(shape)
    c_ax = channel_axis % 4
    c = shape[c_ax]
    gamma, beta = rng.standard_normal(c), rng.standard_normal(c)
    red = {a % 4 for a in axes}
    expected = np.empty(shape)
    for idx in np.ndindex(*shape):
        group_of = idx[c_ax] // (c // groups)
        members = [x[j] for j in np.ndindex(*shape)
                   if j[c_ax] // (c // groups) == group_of
                   and all(j[d] == idx[d] for d in range(4) if d != c_ax and d not in red)]
        mean = sum(members) / len(members)
        var = sum((m - mean) ** 2 for m in members) / len(members)
        expected[idx] = (x[idx] - mean) / np.sqrt(var + 1e-5) * gamma[idx[c_ax]] + beta[idx[c_ax]]
    got = reference("relax.nn.group_norm")(x, gamma, beta, num_groups=groups, channel_axis=channel_axis,
                                          axes=axes, epsilon=1e-5, center=True, scale=True)
    np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("channel_axis, axes", [(1, [2, 3]), (-1, [1, 2]), (3, [1]), (0, [1, 2, 3])])
def test_instance_norm_on_every_channel_axis(channel_axis, axes):
    shape = (2, 3, 4, 5)
    rng = np.random.default_rng(4)
    x = rng.standard_normal(shape)
    c_ax = channel_axis % 4
    gamma, beta = rng.standard_normal(shape[c_ax]), rng.standard_normal(shape[c_ax])

    def stat(group, value):
        mean = sum(group) / len(group)
        return (value - mean) / np.sqrt(sum((g - mean) ** 2 for g in group) / len(group) + 1e-5)

    expected = _normalise_loop(x, axes, stat)
    for idx in np.ndindex(*shape):
        expected[idx] = expected[idx] * gamma[idx[c_ax]] + beta[idx[c_ax]]
    got = reference("relax.nn.instance_norm")(x, gamma, beta, channel_axis=channel_axis, axes=axes,
                                             epsilon=1e-5, center=True, scale=True)
    np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("axis", [0, 1, 2, -1, -2, -3])
def test_batch_norm_inference_on_every_axis(axis):
    rng = np.random.default_rng(5)
    x = rng.standard_normal(SHAPE)
    c = SHAPE[axis]
    gamma, beta, mean, var = (rng.standard_normal(c), rng.standard_normal(c), rng.standard_normal(c),
                              rng.random(c) + 0.5)
    expected = np.empty(SHAPE)
    for idx in np.ndindex(*SHAPE):
        k = idx[axis % 3]
        expected[idx] = (x[idx] - mean[k]) / np.sqrt(var[k] + 1e-5) * gamma[k] + beta[k]
    got = reference("relax.nn.batch_norm")(x, gamma, beta, mean, var, axis=axis, epsilon=1e-5,
                                          center=True, scale=True, momentum=0.1, training=False)
    np.testing.assert_allclose(got[0], expected, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", ["relax.nn.softmax", "relax.nn.log_softmax"])
@pytest.mark.parametrize("axis", [0, 1, 2, -1, -2, -3])
def test_softmax_on_every_axis(name, axis):
    x = np.random.default_rng(6).standard_normal(SHAPE)
    expected = np.empty(SHAPE)
    a = axis % 3
    for idx in np.ndindex(*SHAPE):
        row = [x[idx[:a] + (i,) + idx[a + 1:]] for i in range(SHAPE[a])]
        total = sum(np.exp(r) for r in row)
        expected[idx] = np.exp(x[idx]) / total if name.endswith(".softmax") else x[idx] - np.log(total)
    np.testing.assert_allclose(reference(name)(x, axis=axis), expected, rtol=1e-10, atol=1e-12)


# --------------------------------------------------------------------------- through verify
def _verify(*args):
    from byocc.cli import cli

    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


LAYER_NORM_AXES = """\
# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4, 8, 16), dtype="float32"), g: R.Tensor((AXLEN,), dtype="float32"), b: R.Tensor((AXLEN,), dtype="float32"), w: R.Tensor((16, 16), dtype="float32")) -> R.Tensor((4, 8, 16), dtype="float32"):
        with R.dataflow():
            lv: R.Tensor((4, 8, 16), dtype="float32") = R.nn.layer_norm(x, g, b, axes=[AXES], epsilon=1.0000000000000001e-05, center=True, scale=True)
            gv: R.Tensor((4, 8, 16), dtype="float32") = R.matmul(lv, w, out_dtype="void")
            R.output(gv)
        return gv
"""


@pytest.mark.parametrize("axis, length", [(-2, 8), (0, 4), (1, 8), (2, 16), (-1, 16)])
def test_verify_a_layer_norm_on_a_non_last_axis(tmp_path, axis, length):
    model = tmp_path / "ln.relax"
    model.write_text(LAYER_NORM_AXES.replace("AXLEN", str(length)).replace("AXES", str(axis)))
    result = _verify("verify", model, "--backend", "cutlass", "--path", "merge", "--trials", "2")
    assert result.exit_code == 0, result.output
    assert result.stderr.endswith("ok: the partitioned module computes what the original does "
                                  "(on the interpreter; the generated code was not run)\n")


@pytest.mark.skipif(not CORPUS.is_dir(), reason="needs ../shared/conformance")
@pytest.mark.parametrize("case", ["function_not_named_main", "custom_is_gv_call", "layer_norm_rejected_variants",
                                  "random_p000", "random_p006", "custom_helpers_mixed"])
def test_verify_corpus_cases_that_failed(case):
    """The corpus runs that `verify` failed on: every partition run of these cases."""
    sys.path.insert(0, str(ROOT / "tools"))
    from verify_corpus import partition_runs
    from verify_corpus import verify_one

    runs = partition_runs([CORPUS / case])
    assert runs
    for folder, name, args in runs:
        label, code, stderr = verify_one((folder, name, args, 1))
        assert code == 0, (label, stderr)
