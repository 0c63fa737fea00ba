"""The HTML report in a real browser (issue 12): Playwright driving Debian's Chromium.

Each page is opened from disk with every request recorded (and any but the page itself
refused): the page must make none. The DOM holds the elements the module implies, a
region expands to its operators and closes again, a host operator's reason shows on click
and hover, screenshots are not blank, and a 20 000-binding transformer renders within
20 s. Skips, with the command that installs it, when Playwright, Chromium or Graphviz is
missing (``pip install playwright``, ``apt-get install chromium graphviz``; no
``playwright install``: the system Chromium is used).

``BYOCC_REPORT_SHOTS=DIR`` keeps the screenshots in DIR; ``BYOCC_REPORT_PNG=FILE`` writes
the README's picture (the transformer sample) to FILE.
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from pathlib import Path

import pytest
from conftest import ROOT
from conftest import run_cli
from report_helpers import expected_dom

SAMPLES = ROOT / "samples"
CHROMIUM = os.environ.get("BYOCC_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def _missing() -> str | None:
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "Playwright is not installed (pip install playwright; the tests use the system chromium)"
    if not os.path.exists(CHROMIUM):
        return "chromium is not installed (apt-get install chromium, or set BYOCC_CHROMIUM)"
    if shutil.which("dot") is None:
        return "Graphviz's dot is not installed (apt-get install graphviz)"
    return None


pytestmark = pytest.mark.skipif(_missing() is not None, reason=_missing() or "")


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(
            str(tmp_path_factory.mktemp("chromium-profile")), executable_path=CHROMIUM, headless=True,
            args=ARGS, viewport={"width": 1400, "height": 900})
        yield context
        context.close()


class Opened:
    def __init__(self, browser, path: Path):
        self.url = path.resolve().as_uri()
        self.requests: list[str] = []
        self.errors: list[str] = []
        self.page = browser.new_page()
        self.page.on("request", lambda r: self.requests.append(r.url))
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.route("**/*", self._route)

    def _route(self, route):
        if route.request.url == self.url:
            route.continue_()
        else:
            route.abort()

    def goto(self) -> float:
        start = time.monotonic()
        self.page.goto(self.url, wait_until="load", timeout=120_000)
        return time.monotonic() - start

    def count(self, selector: str) -> int:
        return self.page.evaluate("s => document.querySelectorAll(s).length", selector)

    def close(self) -> None:
        assert self.errors == []
        assert self.requests == [self.url]  # the page itself, nothing else
        self.page.close()


def _ink(browser, png: bytes) -> tuple[float, float]:
    """(standard deviation of luminance, share of pixels away from the commonest value) of a
    PNG, decoded by the browser's canvas in a page of its own."""
    import base64

    page = browser.new_page()
    try:
        return tuple(page.evaluate("""async (b64) => {
            const img = new Image(); img.src = "data:image/png;base64," + b64; await img.decode();
            const c = document.createElement("canvas"); c.width = img.width; c.height = img.height;
            const x = c.getContext("2d"); x.drawImage(img, 0, 0);
            const d = x.getImageData(0, 0, c.width, c.height).data;
            const hist = new Array(256).fill(0); let n = 0, s = 0, s2 = 0;
            for (let i = 0; i < d.length; i += 4) {
              const l = Math.round(0.299 * d[i] + 0.587 * d[i + 1] + 0.114 * d[i + 2]);
              hist[l]++; n++; s += l; s2 += l * l;
            }
            const mode = hist.indexOf(Math.max(...hist)); let far = 0;
            for (let v = 0; v < 256; v++) if (Math.abs(v - mode) > 40) far += hist[v];
            const m = s / n; return [Math.sqrt(s2 / n - m * m), far / n];
        }""", base64.b64encode(png).decode()))
    finally:
        page.close()


def _shot(browser, opened: Opened, name: str, **kwargs) -> bytes:
    png = opened.page.screenshot(**kwargs)
    keep = os.environ.get("BYOCC_REPORT_SHOTS")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        (Path(keep) / name).write_bytes(png)
    std, far = _ink(browser, png)
    assert std > 12 and far > 0.01, f"{name}: the screenshot looks blank (std {std:.1f}, ink {far:.3f})"
    return png


def _partition(tmp_path: Path, model: Path, *options: str):
    out = tmp_path / "report.html"
    part = tmp_path / "part.relax"
    got = run_cli("partition", model, *options, "--report", out)
    assert got.exit_code == 0, got.stderr
    part.write_text(got.stdout)
    from byocc.text import read_file

    return out, read_file(part)


def _check_dom(opened: Opened, mod) -> None:
    exp = expected_dom(mod)
    for fn, n in exp.bindings.items():
        assert opened.count(f'section[data-graph="{fn}"] [data-binding]') == n
    assert opened.count("[data-function][data-backend]") == sum(exp.calls.values())
    names = opened.page.evaluate(
        "() => [...new Set([...document.querySelectorAll('[data-function]')].map(e => e.dataset.function))]")
    assert sorted(names) == sorted(exp.backend)


def _expand(opened: Opened, function: str, nodes: int) -> None:
    page = opened.page
    page.click(f'section.fn [data-function="{function}"]')
    exp = page.locator(f'.exp[data-expansion-of="{function}"]')
    exp.wait_for(state="visible")
    assert exp.locator("[data-inner-binding]").count() == nodes
    sizes = exp.evaluate("e => [...e.querySelectorAll('[data-inner-binding]')].map(g => g.getBBox().width)")
    assert len(sizes) == nodes and min(sizes) > 10
    # the panel names the whole function
    assert page.locator("#details code.full").first.inner_text() == function


def test_transformer_regions_expand_and_close(browser, tmp_path):
    html, mod = _partition(tmp_path, SAMPLES / "transformer_block_fp16.relax", "--backend", "cutlass",
                           "--path", "merge")
    opened = Opened(browser, html)
    opened.goto()
    _check_dom(opened, mod)
    exp = expected_dom(mod)
    for function, nodes in sorted(exp.body.items()):
        _expand(opened, function, nodes)
    assert opened.count(".exp") == len(exp.body)
    opened.page.locator(".exp .x").first.click()  # its close button
    assert opened.count(".exp") == len(exp.body) - 1
    opened.page.keyboard.press("Escape")  # closes every expansion
    assert opened.count(".exp") == 0 and opened.count("g.region.open") == 0
    _shot(browser, opened, "transformer_merge.png")
    opened.close()


def test_host_operators_say_why_on_click_and_hover(browser, tmp_path):
    html, mod = _partition(tmp_path, SAMPLES / "small_cnn.onnx", "--backend", "cutlass")
    opened = Opened(browser, html)
    opened.goto()
    _check_dom(opened, mod)
    heavy = opened.page.locator('section.fn g.heavy[data-op="relax.nn.conv2d"]')
    assert heavy.count() == 5
    first = heavy.first
    assert "data_layout NCHW != NHWC" in first.get_attribute("data-reason")
    assert "data_layout NCHW != NHWC" in first.locator("title").text_content()  # the hover text
    first.click()
    assert "data_layout NCHW != NHWC" in opened.page.locator("#details .reason").inner_text()
    opened.page.click("#back")
    assert opened.page.locator("#summary").is_visible()
    # the summary's list jumps to the binding
    opened.page.locator("#summary a.jump").first.click()
    assert opened.page.locator("#details h3").inner_text().startswith("kept on the host: ")
    _shot(browser, opened, "small_cnn.png")
    opened.close()


def test_resnet50_from_onnx(browser, tmp_path):
    import onnx
    from resnet_onnx import resnet50

    model = tmp_path / "resnet50.onnx"
    onnx.save(resnet50("float16"), str(model))
    html, mod = _partition(tmp_path, model, "--backend", "cutlass", "--prepare", "--path", "merge")
    opened = Opened(browser, html)
    opened.goto()
    _check_dom(opened, mod)
    exp = expected_dom(mod)
    biggest = max(exp.body, key=exp.body.get)
    assert exp.body[biggest] > 150  # the 15 bottleneck blocks after the first, merged
    _shot(browser, opened, "resnet50.png")
    _expand(opened, biggest, exp.body[biggest])
    assert opened.count(f'.exp[data-expansion-of="{biggest}"] [data-composite]') == 52
    _shot(browser, opened, "resnet50_expanded.png")
    opened.close()


def test_20000_binding_transformer_renders_within_20_seconds(browser, tmp_path):
    sys.path.insert(0, str(ROOT / "bench"))
    from genmodel import make_module_text

    from byocc.backends import get_backend
    from byocc.cli.report import render_html
    from byocc.text import parse_module
    from byocc.transform import partition

    mod = partition(parse_module(make_module_text(20_000, "transformer")), get_backend("cutlass").patterns())
    html = tmp_path / "big.html"
    html.write_text(render_html(mod, "20 000 bindings"), encoding="utf-8")
    opened = Opened(browser, html)
    seconds = opened.goto()
    start = time.monotonic()
    _shot(browser, opened, "transformer_20000.png")
    seconds += time.monotonic() - start
    assert seconds < 20, f"loading and drawing took {seconds:.1f} s"
    _check_dom(opened, mod)
    opened.close()


def test_readme_picture(browser, tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)  # the page names the sample as the README's command does
    html, mod = _partition(tmp_path, Path("samples/transformer_block_fp16.relax"), "--backend", "cublas",
                           "--path", "merge")
    opened = Opened(browser, html)
    opened.goto()
    _check_dom(opened, mod)
    page = opened.page
    page.click('section.fn [data-binding="lv"]')  # the attention scores' region opens
    page.click('section.fn [data-binding="ln1"]')  # a layer norm cuBLAS cannot take: why
    page.evaluate("window.scrollTo(0, 0)")
    png = _shot(browser, opened, "readme.png")
    target = os.environ.get("BYOCC_REPORT_PNG")
    if target:
        Path(target).write_bytes(png)
    opened.close()
