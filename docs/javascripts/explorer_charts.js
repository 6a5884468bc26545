// A few SVG drawing helpers for the explorer (explorer.js): axes with linear or logarithmic
// scales, lines, dots and labels. Plain SVG, no library: the page stays light and needs nothing
// from the network. Charts are drawn in viewBox units and scale with their container.
(function (root) {
  "use strict";

  const SVGNS = "http://www.w3.org/2000/svg";

  function el(tag, attrs = {}, parent = null, text = null) {
    const node = document.createElementNS(SVGNS, tag);
    for (const [key, value] of Object.entries(attrs)) {
      if (value !== null && value !== undefined) node.setAttribute(key, String(value));
    }
    if (text !== null) node.textContent = text;
    if (parent) parent.appendChild(node);
    return node;
  }

  const SUPERSCRIPT = { "-": "\u207b", 0: "\u2070", 1: "\u00b9", 2: "\u00b2", 3: "\u00b3", 4: "\u2074",
    5: "\u2075", 6: "\u2076", 7: "\u2077", 8: "\u2078", 9: "\u2079" };

  function power10(k) {
    if (k === 0) return "1";
    if (k === 1) return "10";
    return "10" + String(k).split("").map((c) => SUPERSCRIPT[c]).join("");
  }

  // A number for a reader: 4 significant digits, no trailing zeros, exponent form if needed.
  function fmt(value, digits = 4) {
    if (!Number.isFinite(value)) return String(value);
    if (value === 0) return "0";
    const magnitude = Math.abs(value);
    if (magnitude >= 1e6 || magnitude < 1e-3) {
      const [mantissa, exponent] = value.toExponential(digits - 1).split("e");
      const m = String(Number(mantissa));
      return `${m}\u00b7${power10(Number(exponent))}`;
    }
    if (Number.isInteger(value) && magnitude < 1e6) return String(value);
    return String(Number(value.toPrecision(digits)));
  }

  function niceStep(span, count) {
    const raw = span / Math.max(count, 1);
    const power = Math.pow(10, Math.floor(Math.log10(raw)));
    const ratio = raw / power;
    return power * (ratio < 1.5 ? 1 : ratio < 3 ? 2 : ratio < 7 ? 5 : 10);
  }

  function linearTicks(min, max, count = 5) {
    const step = niceStep(max - min, count);
    const ticks = [];
    for (let t = Math.ceil(min / step) * step; t <= max + step * 1e-9; t += step) {
      ticks.push(Math.abs(t) < step * 1e-9 ? 0 : t);
    }
    return ticks.map((t) => ({ value: t, label: fmt(Number(t.toPrecision(12))) }));
  }

  function logTicks(min, max, count = 6) {
    const lo = Math.ceil(Math.log10(min) - 1e-9);
    const hi = Math.floor(Math.log10(max) + 1e-9);
    const every = Math.max(1, Math.ceil((hi - lo + 1) / count));
    const ticks = [];
    for (let k = lo; k <= hi; k++) {
      if ((k - lo) % every === 0) ticks.push({ value: Math.pow(10, k), label: power10(k) });
    }
    return ticks;
  }

  // A 2-D chart inside `svg` (emptied first). Options: width, height, margin {l, r, t, b},
  // x and y axes {min, max, log, label, ticks}. Returns scale functions and draw helpers.
  function chart(svg, options) {
    while (svg.firstChild) svg.removeChild(svg.firstChild);
    const width = options.width ?? 360;
    const height = options.height ?? 240;
    const m = { l: 46, r: 12, t: 10, b: 36, ...(options.margin || {}) };
    svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
    svg.setAttribute("preserveAspectRatio", "xMidYMid meet");
    const x = options.x;
    const y = options.y;
    const scale = (axis, lo, hi) => {
      if (axis.log) {
        const a = Math.log10(axis.min);
        const b = Math.log10(axis.max);
        return (v) => lo + ((Math.log10(v) - a) / (b - a)) * (hi - lo);
      }
      return (v) => lo + ((v - axis.min) / (axis.max - axis.min)) * (hi - lo);
    };
    const sx = scale(x, m.l, width - m.r);
    const sy = scale(y, height - m.b, m.t);
    const grid = el("g", { class: "pe-grid" }, svg);
    const axes = el("g", { class: "pe-axes" }, svg);
    const xTicks = x.ticks ?? (x.log ? logTicks(x.min, x.max) : linearTicks(x.min, x.max));
    const yTicks = y.ticks ?? (y.log ? logTicks(y.min, y.max, 5) : linearTicks(y.min, y.max, 4));
    for (const t of xTicks) {
      const px = sx(t.value);
      el("line", { x1: px, x2: px, y1: m.t, y2: height - m.b }, grid);
      el("text", { x: px, y: height - m.b + 12, "text-anchor": "middle" }, axes, t.label);
    }
    for (const t of yTicks) {
      const py = sy(t.value);
      el("line", { x1: m.l, x2: width - m.r, y1: py, y2: py }, grid);
      el("text", { x: m.l - 4, y: py + 3.5, "text-anchor": "end" }, axes, t.label);
    }
    el("rect", { x: m.l, y: m.t, width: width - m.l - m.r, height: height - m.t - m.b, class: "pe-frame" }, axes);
    if (x.label) el("text", { x: (m.l + width - m.r) / 2, y: height - 4, "text-anchor": "middle", class: "pe-label" }, axes, x.label);
    if (y.label) {
      const cy = (m.t + height - m.b) / 2;
      el("text", { x: 11, y: cy, "text-anchor": "middle", transform: `rotate(-90 11 ${cy})`, class: "pe-label" }, axes, y.label);
    }
    const layer = el("g", { class: "pe-data" }, svg);
    const clipX = (v) => Math.min(Math.max(v, m.l), width - m.r);
    const clipY = (v) => Math.min(Math.max(v, m.t), height - m.b);
    return {
      svg,
      sx,
      sy,
      width,
      height,
      margin: m,
      line(xs, ys, cls) {
        let d = "";
        for (let i = 0; i < xs.length; i++) {
          const px = sx(xs[i]);
          const py = sy(ys[i]);
          if (!Number.isFinite(px) || !Number.isFinite(py)) continue;
          d += `${d ? "L" : "M"}${px.toFixed(2)},${clipY(py).toFixed(2)}`;
        }
        return el("path", { d, class: cls }, layer);
      },
      dots(xs, ys, cls, r = 2) {
        const g = el("g", { class: cls }, layer);
        for (let i = 0; i < xs.length; i++) {
          const py = sy(ys[i]);
          if (py < m.t - 0.5 || py > height - m.b + 0.5) continue;
          el("circle", { cx: sx(xs[i]).toFixed(2), cy: py.toFixed(2), r }, g);
        }
        return g;
      },
      hline(value, cls, label) {
        const py = sy(value);
        if (py < m.t || py > height - m.b) return null;
        el("line", { x1: m.l, x2: width - m.r, y1: py, y2: py, class: cls }, layer);
        if (label) el("text", { x: m.l + 4, y: py - 3, class: `${cls} pe-note` }, layer, label);
        return py;
      },
      vline(value, cls, label) {
        const px = sx(value);
        if (px < m.l || px > width - m.r) return null;
        el("line", { x1: px, x2: px, y1: m.t, y2: height - m.b, class: cls }, layer);
        if (label) el("text", { x: px + 3, y: m.t + 9, class: `${cls} pe-note` }, layer, label);
        return px;
      },
      marker(xv, yv, cls, r = 4) {
        return el("circle", { cx: clipX(sx(xv)), cy: clipY(sy(yv)), r, class: cls }, layer);
      },
      text(xv, yv, text, cls, anchor = "start") {
        return el("text", { x: sx(xv), y: sy(yv), class: cls, "text-anchor": anchor }, layer, text);
      },
      layer,
    };
  }

  // A legend row under a chart, as HTML (it wraps on a phone, SVG text would not).
  function legend(container, items) {
    container.textContent = "";
    for (const item of items) {
      const entry = document.createElement("span");
      entry.className = "pe-legend-item";
      const swatch = document.createElement("span");
      swatch.className = `pe-swatch ${item.cls}`;
      swatch.setAttribute("aria-hidden", "true");
      entry.append(swatch, document.createTextNode(item.label));
      container.appendChild(entry);
    }
  }

  root.posencCharts = { el, chart, legend, fmt, power10, linearTicks, logTicks };
})(typeof self !== "undefined" ? self : this);
