(function () {
  "use strict";
  var svg = document.getElementById("tl");
  var W = 1000;
  if (svg) {
    var vb = { x: 0, w: W };
    var h = svg.viewBox.baseVal.height;
    var t0 = Number(svg.dataset.t0), span = Number(svg.dataset.span);
    var axis = document.getElementById("tlaxis");
    var range = document.getElementById("tlrange");
    var fmt = function (ms) { return new Date(t0 + ms).toISOString().slice(11, 23); };
    var apply = function () {
      vb.w = Math.min(W, Math.max(W / 10000, vb.w));
      vb.x = Math.min(W - vb.w, Math.max(0, vb.x));
      svg.setAttribute("viewBox", vb.x + " 0 " + vb.w + " " + h);
      var spans = axis.children;
      for (var i = 0; i < spans.length; i++) {
        spans[i].textContent = fmt(span * (vb.x + vb.w * i / (spans.length - 1)) / W);
      }
      range.textContent = vb.w < W ? "showing " + (100 * vb.w / W).toFixed(2) + "% of the capture" : "";
    };
    var zoom = function (f, at) {
      if (at === undefined) { at = vb.x + vb.w / 2; }
      var nw = vb.w * f;
      vb.x = at - (at - vb.x) * nw / vb.w;
      vb.w = nw;
      apply();
    };
    var pos = function (e) {
      var r = svg.getBoundingClientRect();
      return vb.x + vb.w * (e.clientX - r.left) / r.width;
    };
    svg.addEventListener("wheel", function (e) { e.preventDefault(); zoom(e.deltaY < 0 ? 0.8 : 1.25, pos(e)); }, { passive: false });
    var drag = null, moved = false;
    svg.addEventListener("pointerdown", function (e) { drag = { cx: e.clientX, x: vb.x }; moved = false; });
    window.addEventListener("pointerup", function () { drag = null; });
    svg.addEventListener("pointermove", function (e) {
      if (!drag) { return; }
      var r = svg.getBoundingClientRect();
      var dx = e.clientX - drag.cx;
      if (Math.abs(dx) > 3) { moved = true; }
      vb.x = drag.x - dx * vb.w / r.width;
      apply();
    });
    document.querySelectorAll(".tlctl button").forEach(function (b) {
      b.addEventListener("click", function () {
        var z = b.dataset.z;
        if (z === "in") { zoom(0.5); } else if (z === "out") { zoom(2); } else if (z === "reset") { vb.x = 0; vb.w = W; apply(); } else { vb.x += (z === "left" ? -0.25 : 0.25) * vb.w; apply(); }
      });
    });
    // The marks in time order, for the keyboard: n and p step to the next
    // and previous re-send and open its finding, as a click on its mark.
    var marks = Array.prototype.slice.call(svg.querySelectorAll(".mk")).sort(function (a, b) {
      return a.x1.baseVal.value - b.x1.baseVal.value;
    });
    var cur = -1;
    var step = function (d) {
      if (!marks.length) { return; }
      cur = Math.min(marks.length - 1, Math.max(0, cur + d));
      var m = marks[cur], x = m.x1.baseVal.value;
      if (x < vb.x || x > vb.x + vb.w) { vb.x = x - vb.w / 2; apply(); }
      open(m.dataset.f, m);
      svg.parentNode.focus({ preventScroll: true });
    };
    svg.parentNode.addEventListener("keydown", function (e) {
      if (e.key === "n" || e.key === "p") { e.preventDefault(); step(e.key === "n" ? 1 : -1); return; }
      var k = { "+": "in", "=": "in", "-": "out", "ArrowLeft": "left", "ArrowRight": "right", "0": "reset" }[e.key];
      if (k) { e.preventDefault(); document.querySelector('.tlctl button[data-z="' + k + '"]').click(); }
    });
    svg.addEventListener("click", function (e) {
      var m = e.target.closest ? e.target.closest(".mk") : null;
      if (!m || moved) { return; }
      open(m.dataset.f, m);
    });
    apply();
  }
  function open(num, mark) {
    document.querySelectorAll(".mk.sel, details.hl").forEach(function (x) { x.classList.remove("sel"); x.classList.remove("hl"); });
    if (mark) { mark.classList.add("sel"); }
    var d = document.getElementById("f" + num);
    if (!d) {
      var row = document.querySelector('#ft tr[data-num="' + num + '"]');
      if (row) { row.scrollIntoView({ block: "center" }); }
      return;
    }
    var outer = d.closest("details.harmless");
    if (outer) { outer.open = true; }
    d.open = true;
    d.classList.add("hl");
    d.scrollIntoView({ block: "start" });
  }
  // A link to report.html#f12 opens finding 12, as a click on its mark.
  var fromHash = function () {
    var m = /^#f(\d+)$/.exec(location.hash);
    if (m) { open(m[1], document.querySelector('#tl .mk[data-f="' + m[1] + '"]')); }
  };
  window.addEventListener("hashchange", fromHash);
  fromHash();
  var table = document.getElementById("ft");
  if (table) {
    var body = table.tBodies[0];
    var fv = document.getElementById("fv"), fq = document.getElementById("fq");
    var filter = function () {
      var v = fv.value, q = fq.value.toLowerCase();
      for (var i = 0; i < body.rows.length; i++) {
        var r = body.rows[i];
        r.hidden = (v && r.dataset.verdict !== v) || (q && r.textContent.toLowerCase().indexOf(q) < 0);
      }
    };
    fv.addEventListener("change", filter);
    fq.addEventListener("input", filter);
    table.querySelectorAll("th").forEach(function (th, col) {
      th.querySelector("button").addEventListener("click", function () {
        var asc = th.getAttribute("aria-sort") !== "ascending";
        table.querySelectorAll("th").forEach(function (x) { x.removeAttribute("aria-sort"); });
        th.setAttribute("aria-sort", asc ? "ascending" : "descending");
        var num = th.dataset.k === "n";
        var rows = Array.prototype.slice.call(body.rows);
        rows.sort(function (a, b) {
          var x = a.cells[col].textContent, y = b.cells[col].textContent;
          var c = num ? Number(x) - Number(y) : x.localeCompare(y);
          return asc ? c : -c;
        });
        rows.forEach(function (r) { body.appendChild(r); });
      });
    });
  }
  document.documentElement.setAttribute("data-ready", "1");
})();
