"""The page's inline style sheet and script (byocc's own; no third-party code, no fetch).

The script adds the interactions to the static SVG: clicking a region (an offloaded
function's call) expands it in place into its body graph, cloned from the function's
``<template data-body-of>``; clicking any node shows its whole text (full names, the
reason it stayed on the host) in the side panel; a reference node jumps to the value it
stands for; the search box finds bindings, functions and operators; Escape closes every
expansion; the zoom buttons scale the graphs.
"""

STYLE = r"""
:root{--fg:#1d2330;--muted:#5b6475;--line:#d5d9e0;--bg:#f5f6f8;--heavy:#d9480f;--sel:#1971c2}
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;color:var(--fg);background:var(--bg)}
header{padding:14px 24px 10px;background:#fff;border-bottom:1px solid var(--line)}
header h1{font-size:19px;margin:0 0 2px}
header p{margin:0;color:var(--muted)}
code,.mono{font-family:ui-monospace,"DejaVu Sans Mono",Menlo,Consolas,monospace;font-size:12.5px}
.layout{display:grid;grid-template-columns:minmax(0,1fr) 400px;align-items:start}
.content{padding:10px 20px 40px;min-width:0}
#graphs{overflow-x:auto;padding-bottom:8px}
.cards{display:flex;flex-wrap:wrap;gap:8px;margin:2px 0 8px}
.card{background:#fff;border:1px solid var(--line);border-radius:8px;padding:5px 12px;flex:1 1 0;min-width:120px;max-width:220px}
.card.warn{border-color:var(--heavy);background:#fff4e6}
.card b{display:block;font-size:18px}
.card span{color:var(--muted);font-size:12px;line-height:1.3;display:block}
.bar{height:8px;border-radius:4px;background:#e3e6eb;margin-top:6px;overflow:hidden}
.bar i{display:block;height:100%;background:#2f9e44}
details.sum{margin:0 0 10px;padding:0}
details.sum>summary{cursor:pointer;font-weight:600}
table{border-collapse:collapse;margin:4px 0 8px;font-size:12.5px;width:100%}
th,td{border-bottom:1px solid #e6e8ec;padding:2px 6px;text-align:left;vertical-align:top}
td code{word-break:break-all}
ul.heavy{padding-left:18px;margin:4px 0;font-size:12.5px}
ul.heavy li{margin:2px 0}
th{font-weight:600;color:var(--muted)}
td.r,th.r{text-align:right;font-variant-numeric:tabular-nums}
.legend{display:flex;flex-wrap:wrap;gap:4px 14px;align-items:center;margin:4px 0 4px;font-size:12.5px}
.legend span{display:inline-flex;align-items:center;gap:6px}
.sw{display:inline-block;width:22px;height:14px;border-radius:3px;border:1px solid #9aa3b2;background:#fff}
.sw.heavy{border:2px solid var(--heavy);background:#fff4e6}
.sw.param{border-radius:7px;background:#eef1f5}
.sw.ref{border-style:dashed;background:#eef1f5}
.sw.region{border-width:2px;border-color:var(--bk);background:var(--bkf)}
.tools{position:sticky;top:0;z-index:20;display:flex;gap:6px;align-items:center;padding:6px 0;background:var(--bg)}
.tools input{font:inherit;padding:3px 8px;width:260px;border:1px solid var(--line);border-radius:6px}
.tools button,.panel button{font:inherit;padding:2px 10px;border:1px solid var(--line);border-radius:6px;background:#fff;cursor:pointer}
.tools .hint{color:var(--muted);font-size:12.5px}
section.fn{margin:10px 0 18px}
section.fn>h2{font-size:16px;margin:6px 0}
section.fn>h2 small{font-weight:400;color:var(--muted)}
.note{color:var(--muted);font-size:12.5px;margin:0 0 6px}
.part{position:relative;content-visibility:auto;margin:0 0 8px;background:#fff;border:1px solid var(--line);border-radius:8px;padding:6px 8px;width:max-content;max-width:none}
.ph{color:var(--muted);font-size:12px;margin-bottom:2px}
.canvas{position:relative}
svg.g{display:block;overflow:visible}
svg.g text{font:12px ui-monospace,"DejaVu Sans Mono",Menlo,Consolas,monospace;fill:var(--fg);white-space:pre}
g.n{cursor:pointer}
g.n rect{fill:#fff;stroke:#9aa3b2;stroke-width:1}
g.n text.h{font-weight:600}
g.n text.s{fill:var(--muted);font-size:11.5px}
g.value rect{fill:#fafbfc;stroke:#b8bfcb}
g.call rect,g.extern rect{fill:#f3f0ff;stroke:#7950f2}
g.param rect,g.return rect{fill:#eef1f5;stroke:#aab2bf}
g.ref rect{fill:#eef1f5;stroke:#8c95a6;stroke-dasharray:4 3}
g.region rect{fill:var(--bkf);stroke:var(--bk);stroke-width:2.2}
g.region text.tog{font-weight:700;fill:var(--bk);font-size:14px}
g.region.open rect{stroke-dasharray:6 3}
g.heavy rect{fill:#fff4e6;stroke:var(--heavy);stroke-width:2.4}
g.heavy text.warn{fill:var(--heavy);font-weight:800}
g.n:hover rect{filter:drop-shadow(0 1px 3px rgba(0,0,0,.28))}
g.n.sel rect{stroke:var(--sel);stroke-width:3}
g.n.flash rect{stroke:var(--sel);stroke-width:4;fill:#d0ebff}
.es path{fill:none;stroke:#8c95a6;stroke-width:1.2;marker-end:url(#byocc-arrow)}
g.cl rect{fill:var(--bkf);fill-opacity:.45;stroke:var(--bk);stroke-dasharray:3 2}
g.cl text{font-size:11px;fill:var(--muted)}
.exp{position:absolute;z-index:30;background:#fff;border:2px solid var(--bk);border-radius:8px;box-shadow:0 10px 30px rgba(0,0,0,.28);max-width:min(92vw,1400px);max-height:82vh;overflow:auto;padding:0 10px 10px}
.exp .eh{position:sticky;top:0;background:#fff;display:flex;gap:8px;align-items:baseline;padding:6px 0;border-bottom:1px solid var(--line);margin-bottom:6px;z-index:1}
.exp .eh b{color:var(--bk)}
.exp .eh .x{margin-left:auto;border:1px solid var(--line);border-radius:6px;background:#fff;cursor:pointer;font-size:15px;line-height:1;padding:2px 8px}
.exp .part{border:none;padding:0;margin:0 0 6px;content-visibility:visible}
.panel{position:sticky;top:0;height:100vh;overflow:auto;background:#fff;border-left:1px solid var(--line);padding:10px 14px}
#back{margin-bottom:8px}
.panel h3{margin:0 0 6px;font-size:15px}
.panel .full{word-break:break-all;white-space:pre-wrap;display:block;background:#f5f6f8;border-radius:6px;padding:6px 8px;margin:4px 0 8px;max-height:40vh;overflow:auto}
.panel .reason{border-left:4px solid var(--heavy);background:#fff4e6;padding:6px 8px;margin:6px 0}
.panel dl{margin:4px 0;display:grid;grid-template-columns:max-content 1fr;gap:2px 10px}
.panel dt{color:var(--muted)}
.panel dd{margin:0;word-break:break-all}
.muted{color:var(--muted)}
a.jump{cursor:pointer;color:var(--sel);text-decoration:underline}
"""

SCRIPT = r"""
(function () {
  "use strict";
  var doc = document;
  var panel = doc.getElementById("panel");
  var graphs = doc.getElementById("graphs");
  var bodies = {};
  Array.prototype.forEach.call(doc.querySelectorAll("template[data-body-of]"), function (t) {
    bodies[t.getAttribute("data-body-of")] = t;
  });
  var selected = null, zoom = 1, found = [], foundAt = -1, lastQuery = null;

  function nodeOf(el) {
    while (el && el !== doc) {
      if (el.classList && el.classList.contains("n") && el.tagName.toLowerCase() === "g") return el;
      el = el.parentNode;
    }
    return null;
  }
  function translateOf(g) {
    var m = /translate\(([-\d.e]+),([-\d.e]+)\)/.exec(g.getAttribute("transform") || "");
    return m ? [parseFloat(m[1]), parseFloat(m[2])] : [0, 0];
  }
  function backendClass(g) {
    for (var i = 0; i < g.classList.length; i++) if (/^bk\d+$/.test(g.classList[i])) return g.classList[i];
    return "bk0";
  }
  function el(tag, cls, text) {
    var e = doc.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }

  function expand(g) {
    if (g.byoccExp) return g.byoccExp;
    var t = bodies[g.getAttribute("data-function")];
    if (!t) return null;
    // the expansion lives on the page, above the graph, where nothing clips it
    var exp = el("div", "exp " + backendClass(g));
    exp.setAttribute("data-expansion-of", g.getAttribute("data-function"));
    exp.appendChild(t.content.cloneNode(true));
    var close = exp.querySelector(".x");
    if (close) close.addEventListener("click", function (ev) { ev.stopPropagation(); collapse(g); });
    doc.body.appendChild(exp);
    var r = g.getBoundingClientRect();
    var left = r.left + window.scrollX, top = r.top + window.scrollY;
    var room = window.scrollX + doc.documentElement.clientWidth - exp.offsetWidth - 8;
    exp.style.left = Math.max(window.scrollX + 4, Math.min(left, room)) + "px";
    exp.style.top = top + "px";
    exp.byoccOwner = g;
    g.byoccExp = exp;
    g.classList.add("open");
    g.setAttribute("aria-expanded", "true");
    return exp;
  }
  function collapse(g) {
    if (!g.byoccExp) return;
    g.byoccExp.remove();
    g.byoccExp = null;
    g.classList.remove("open");
    g.setAttribute("aria-expanded", "false");
  }
  function collapseAll() {
    Array.prototype.forEach.call(doc.querySelectorAll("g.region.open"), collapse);
  }

  function row(dl, key, value) {
    if (value === null || value === undefined || value === "") return;
    dl.appendChild(el("dt", "", key));
    dl.appendChild(el("dd", "", value));
  }
  var summary = doc.getElementById("summary"), details = doc.getElementById("details");
  doc.getElementById("back").addEventListener("click", function () {
    details.hidden = true;
    summary.hidden = false;
    if (selected) selected.classList.remove("sel");
    selected = null;
  });
  function show(g) {
    summary.hidden = true;
    details.hidden = false;
    if (selected) selected.classList.remove("sel");
    selected = g;
    g.classList.add("sel");
    panel.textContent = "";
    var title = g.querySelector("title");
    var text = title ? title.textContent : "";
    var fn = g.getAttribute("data-function");
    var kind = fn ? "offloaded call" : g.hasAttribute("data-ref") ? "reference" :
      g.hasAttribute("data-param") ? "parameter" : g.classList.contains("heavy") ? "kept on the host" :
      g.hasAttribute("data-inner-binding") ? "operator of an offloaded function" : "binding";
    var name = g.getAttribute("data-binding") || g.getAttribute("data-inner-binding") ||
      g.getAttribute("data-ref") || g.getAttribute("data-param") || "";
    panel.appendChild(el("h3", "", kind + (name ? ": " + name : "")));
    var dl = el("dl");
    row(dl, "operator", g.getAttribute("data-op"));
    row(dl, "backend", g.getAttribute("data-backend"));
    var flops = g.getAttribute("data-flops");
    if (flops) row(dl, "FLOPs", Number(flops).toLocaleString("en-US"));
    panel.appendChild(dl);
    var reason = g.getAttribute("data-reason");
    if (reason) panel.appendChild(el("div", "reason", "kept on the host: " + reason));
    if (fn) {
      panel.appendChild(el("div", "muted", "function (whole name):"));
      panel.appendChild(el("code", "full", fn));
      var t = bodies[fn], head = t && t.content.querySelector(".meta");
      if (head) panel.appendChild(head.cloneNode(true));
      var b = el("button", "", g.byoccExp ? "collapse" : "expand its operators");
      b.addEventListener("click", function () { if (g.byoccExp) collapse(g); else expand(g); show(g); });
      panel.appendChild(b);
    }
    if (g.hasAttribute("data-ref")) {
      var a = el("a", "jump", "go to " + g.getAttribute("data-ref"));
      a.addEventListener("click", function () { jumpTo(g); });
      panel.appendChild(a);
    }
    if (!fn) {
      panel.appendChild(el("div", "muted", "text:"));
      panel.appendChild(el("code", "full", text));
    }
  }
  function flash(g) {
    g.classList.add("flash");
    setTimeout(function () { g.classList.remove("flash"); }, 1600);
  }
  function reveal(g) {
    g.scrollIntoView({block: "center", inline: "center"});
    flash(g);
    show(g);
  }
  function jumpTo(ref) {
    var section = ref.closest("section.fn");
    var name = ref.getAttribute("data-ref");
    var target = section && section.querySelector('[data-binding="' + CSS.escape(name) + '"]');
    if (target) reveal(target);
  }

  doc.addEventListener("click", function (ev) {
    var g = nodeOf(ev.target);
    if (g) {
      if (g.hasAttribute("data-ref")) { jumpTo(g); return; }
      if (g.hasAttribute("data-function")) { if (g.byoccExp) collapse(g); else expand(g); }
      show(g);
      return;
    }
    var link = ev.target.closest && ev.target.closest("[data-goto]");
    if (link) {
      ev.preventDefault();
      var section = doc.querySelector('section.fn[data-graph="' + CSS.escape(link.getAttribute("data-graph")) + '"]');
      var target = section && section.querySelector('[data-binding="' + CSS.escape(link.getAttribute("data-goto")) + '"]');
      if (target) reveal(target);
    }
  });
  doc.addEventListener("keydown", function (ev) {
    if (ev.key === "Escape") collapseAll();
  });

  function setZoom(z) {
    zoom = Math.max(0.1, Math.min(4, z));
    graphs.style.zoom = zoom;
    doc.getElementById("zoom-level").textContent = Math.round(zoom * 100) + "%";
  }
  doc.getElementById("zoom-in").addEventListener("click", function () { setZoom(zoom * 1.25); });
  doc.getElementById("zoom-out").addEventListener("click", function () { setZoom(zoom / 1.25); });
  doc.getElementById("zoom-reset").addEventListener("click", function () { setZoom(1); });
  doc.getElementById("collapse-all").addEventListener("click", collapseAll);
  function fit() {
    var widest = 0;
    Array.prototype.forEach.call(graphs.querySelectorAll("section.fn > .part svg.g"), function (s) {
      widest = Math.max(widest, parseFloat(s.getAttribute("width")) + 40);
    });
    var room = graphs.clientWidth;
    setZoom(widest > room * 1.1 && room > 0 ? Math.max(0.5, room / widest) : 1);
  }
  doc.getElementById("zoom-fit").addEventListener("click", fit);
  fit();

  var find = doc.getElementById("find");
  find.addEventListener("keydown", function (ev) {
    if (ev.key !== "Enter") return;
    var q = find.value.trim();
    if (!q) return;
    if (q !== lastQuery) {
      lastQuery = q;
      foundAt = -1;
      var exact = doc.querySelectorAll('[data-binding="' + CSS.escape(q) + '"]');
      found = Array.prototype.slice.call(exact);
      if (!found.length) {
        found = Array.prototype.filter.call(doc.querySelectorAll("g.n[data-binding]"), function (g) {
          var f = g.getAttribute("data-function") || "", op = g.getAttribute("data-op") || "";
          return g.getAttribute("data-binding").indexOf(q) >= 0 || f.indexOf(q) >= 0 || op.indexOf(q) >= 0;
        });
      }
    }
    var status = doc.getElementById("find-status");
    if (!found.length) { status.textContent = "no match"; return; }
    foundAt = (foundAt + 1) % found.length;
    status.textContent = (foundAt + 1) + " of " + found.length;
    reveal(found[foundAt]);
  });
})();
"""

__all__ = ["SCRIPT", "STYLE"]
