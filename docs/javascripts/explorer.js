// The RoPE explorer (explorer.md) and the small widgets on the derivation pages.
//
// Markup: <div class="pe-widget" data-pe-widget="explorer|wavelengths|rotation|decay|scaling">,
// with optional data-base, data-dim, data-head-dim, data-method, data-factor, data-l0,
// data-position, data-pair and data-max-distance for the starting values, and data-zoo (the URL
// of data/zoo.json, written at build time by hooks/explorer_data.py) for the model picker and
// LongRoPE's factor lists. Every number comes from posenc_ref.js (the package's formulas); each
// widget keeps its last inputs and results on its element (element.posencExplorer) so that the
// browser test can compare them with the package.
(function () {
  "use strict";

  const PR = window.posencRef;
  const C = window.posencCharts;
  const fmt = C.fmt;
  const TWO_PI = 2 * Math.PI;
  let uid = 0;

  const METHOD_NAMES = {
    none: "none (plain RoPE)",
    linear: "linear (Position Interpolation)",
    ntk_aware: "NTK-aware",
    dynamic_ntk: "dynamic NTK",
    yarn: "YaRN",
    llama3: "Llama 3",
    longrope: "LongRoPE",
  };

  const DEFAULTS = {
    base: 10000,
    headDim: 128,
    dim: 128,
    method: "none",
    factor: 8,
    L0: 4096,
    position: 100,
    pair: 8,
    betaFast: 32,
    betaSlow: 1,
    truncate: true,
    attentionOverride: null,
    lowFreq: 1,
    highFreq: 4,
    longropeSource: null,
    maxDistance: null,
  };

  // Which controls and panels each kind of widget shows.
  const PRESETS = {
    explorer: {
      controls: ["family", "base", "headDim", "dim", "method", "factor", "L0", "methodExtras", "position", "pair"],
      panels: ["head", "wavelengths", "rotation", "decay", "attention"],
    },
    wavelengths: { controls: ["base", "dim"], panels: ["wavelengths"], context: false, labels: { dim: "width d" } },
    rotation: { controls: ["base", "dim", "pair", "position"], panels: ["rotation"], context: false },
    decay: { controls: ["base", "dim"], panels: ["decay"], context: false },
    scaling: {
      controls: ["method", "factor", "L0", "methodExtras", "base", "dim"],
      panels: ["wavelengths", "attention"],
    },
  };

  // ------------------------------------------------------------------ state -> numbers

  const geometric = (lo, hi, count) => {
    const out = new Set();
    for (let k = 0; k < count; k++) out.add(Math.round(lo * Math.pow(hi / lo, k / (count - 1))));
    return [...out];
  };

  // The package call the state stands for: the method's keyword arguments, as in RopeSpec.scaling.
  function methodParams(s, zoo) {
    const seqLen = s.position + 1; // the call that reaches position m has seq_len m + 1
    switch (s.method) {
      case "none":
        return {};
      case "linear":
      case "ntk_aware":
        return { factor: s.factor };
      case "dynamic_ntk":
        return { factor: s.factor, seq_len: seqLen, original_max_len: s.L0 };
      case "yarn": {
        const p = { factor: s.factor, original_max_len: s.L0, beta_fast: s.betaFast, beta_slow: s.betaSlow, truncate: s.truncate };
        if (s.attentionOverride !== null) p.attention_factor = s.attentionOverride;
        return p;
      }
      case "llama3":
        return { factor: s.factor, low_freq_factor: s.lowFreq, high_freq_factor: s.highFreq, original_max_len: s.L0 };
      case "longrope": {
        const source = zoo && s.longropeSource !== null ? zoo[s.longropeSource] : null;
        if (!source) throw new Error("method longrope needs a released family's factor lists (they are loading, or missing)");
        const p = {
          short_factor: source.scaling.short_factor,
          long_factor: source.scaling.long_factor,
          original_max_len: s.L0,
          seq_len: seqLen,
          factor: s.factor,
        };
        if (s.attentionOverride !== null) p.attention_factor = s.attentionOverride;
        return p;
      }
      default:
        throw new Error(`method must be one of ${PR.METHODS.join(", ")}, got ${s.method}`);
    }
  }

  // Whether the angle `angle` (any size) lies on the arc [0, L0 * w0) that a pair of pre-training
  // frequency w0 swept at positions 0 .. L0 - 1: the point is drawn at angle mod 2 pi.
  function angleSeen(angle, w0, L0) {
    const arc = L0 * w0;
    if (arc >= TWO_PI) return true;
    const turned = angle - TWO_PI * Math.floor(angle / TWO_PI); // in [0, 2 pi)
    return turned < arc;
  }

  // Each rotated pair's kind, as the head panel colours it: "fast" (>= 1 turn within L0 with
  // the pre-training frequencies omega: every angle seen), "kept" (< 1 turn, and a method's
  // scaled frequencies keep it inside the arc it swept, [0, L0 omega_i), up to the extended
  // length: length * omega'_i <= L0 * omega_i) or "slow" (< 1 turn and not kept: it breaks
  // first). Without a method (length null) nothing is kept.
  function pairKinds(omega, scaled, L0, length) {
    return Array.from(omega, (w, i) => {
      if ((L0 * w) / TWO_PI >= 1) return "fast";
      if (length === null) return "slow";
      return length * scaled[i] <= L0 * w * (1 + 1e-12) ? "kept" : "slow";
    });
  }

  function compute(s, zoo, preset) {
    const params = methodParams(s, zoo);
    const omega = PR.invFreq(s.dim, s.base);
    const scaled = PR.scaled(s.method, s.dim, s.base, params);
    const a = scaled.attentionFactor;
    PR.checkInt("position", s.position); // the token index m: check_int's message
    PR.checkRotaryDim(s.headDim, s.dim); // RotaryEmbedding(head_dim, rotary_dim=d)'s messages
    const pair = Math.min(s.pair, s.dim / 2 - 1);
    const at = PR.cosSin(s.position, scaled.invFreq, a);
    const factor = s.method === "none" ? 1 : s.factor;
    const maxDistance = s.maxDistance ?? Math.max(4 * factor * s.L0, 1024);
    const distances = geometric(1, maxDistance, 220);
    const result = {
      params,
      seqLen: s.position + 1,
      invFreq: Array.from(scaled.invFreq),
      omega: Array.from(omega),
      attentionFactor: a,
      position: s.position,
      pair,
      cos: Array.from(at.cos),
      sin: Array.from(at.sin),
      distances,
      bound: preset.panels.includes("decay") ? PR.decayBound(distances, scaled.invFreq) : null,
      score: preset.panels.includes("decay") ? PR.selfScore(distances, scaled.invFreq) : null,
      boundOriginal: null,
    };
    if (preset.panels.includes("decay") && s.method !== "none") {
      result.boundOriginal = PR.decayBound(distances, omega);
    }
    if (s.position >= 1 && preset.panels.includes("decay")) {
      result.boundAtPosition = PR.decayBound([s.position], scaled.invFreq)[0];
      result.scoreAtPosition = PR.selfScore([s.position], scaled.invFreq)[0];
    }
    if (s.method === "yarn") {
      result.yarnRange = PR.yarnRange(s.dim, s.base, s.L0, s.betaFast, s.betaSlow, s.truncate);
    }
    return result;
  }

  // ------------------------------------------------------------------ controls

  const round = (v, digits) => Number(v.toPrecision(digits));
  const subscript = (k) => String(k).replace(/\d/g, (c) => String.fromCharCode(0x2080 + Number(c)));

  // Slider mapping and snapping per numeric control. The number box next to each slider takes
  // any value; the slider covers the usual range.
  const NUMERIC = {
    base: {
      label: "base n",
      toSlider: (v) => Math.log10(v),
      fromSlider: (x) => round(Math.pow(10, x), 3),
      min: 0.31,
      max: 8,
      step: 0.01,
    },
    headDim: { label: "head width d_head", toSlider: (v) => v, fromSlider: (x) => x, min: 4, max: 512, step: 2, integer: true },
    dim: { label: "rotary width d", toSlider: (v) => v, fromSlider: (x) => x, min: 2, max: 512, step: 2, integer: true },
    factor: {
      label: "factor s",
      toSlider: (v) => Math.log10(v),
      fromSlider: (x) => round(Math.pow(10, x), 2),
      min: 0,
      max: 2.11,
      step: 0.01,
    },
    L0: {
      label: "original context L\u2080",
      toSlider: (v) => Math.log2(v),
      fromSlider: (x) => Math.round(Math.pow(2, x)),
      min: 4,
      max: 21,
      step: 1,
      integer: true,
    },
    position: {
      label: "position m",
      toSlider: (v) => Math.log2(v + 1),
      fromSlider: (x) => Math.round(Math.pow(2, x)) - 1,
      min: 0,
      max: 24,
      step: 0.05,
      integer: true,
    },
    pair: { label: "pair i", toSlider: (v) => v, fromSlider: (x) => x, min: 0, max: 63, step: 1, integer: true },
    betaFast: { label: "\u03b2_fast (turns)", number: true },
    betaSlow: { label: "\u03b2_slow (turns)", number: true },
    lowFreq: { label: "low_freq_factor f_low", number: true },
    highFreq: { label: "high_freq_factor f_high", number: true },
  };

  function make(tag, attrs = {}, parent = null, text = null) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs)) {
      if (value === null || value === undefined || value === false) continue;
      if (key === "class") node.className = value;
      else node.setAttribute(key, value === true ? "" : String(value));
    }
    if (text !== null) node.textContent = text;
    if (parent) parent.appendChild(node);
    return node;
  }

  // The wavelengths panel: lambda'_i = 2 pi / omega'_i of each pair on a log scale, the unscaled
  // lambda_i = 2 pi / omega_i dashed where the frequencies differ (`scaled`), and horizontal
  // lines at lengths such as the original context L0. The explorer draws it from its own
  // numbers, the config reader (read_config.js) from a reading's. `view`: {invFreq, omega,
  // scaled, label (of the main series), lines: [{value, cls, label, legend, drawn}], marker (a
  // pair index or null)}. Returns the wavelengths drawn, {lam, lam0}.
  function drawWavelengths(panel, view) {
    const lam = Array.from(view.invFreq, (w) => TWO_PI / w);
    const lam0 = Array.from(view.omega, (w) => TWO_PI / w);
    const pairs = lam.map((_, i) => i);
    const lines = view.lines || [];
    // a pair that does not turn (omega 0: an infinite wavelength) has no place on a log axis
    const values = [...lam, ...lam0, ...lines.map((l) => l.value)].filter((v) => v > 0 && Number.isFinite(v));
    const lo = Math.min(...values) / 1.6;
    const hi = Math.max(...values) * 1.8;
    const prime = view.scaled ? "\u2032" : "";
    panel.title.textContent = `Wavelength 2\u03c0/\u03c9${prime}\u1d62 of each pair (positions per turn)`;
    const ch = C.chart(panel.svg, {
      x: { min: -0.5, max: Math.max(pairs.length - 0.5, 1), label: "pair index i (0 = fastest)" },
      y: { min: lo, max: hi, log: true, label: "wavelength" },
    });
    for (const line of lines) if (line.drawn !== false) ch.hline(line.value, line.cls, line.label);
    if (view.scaled) ch.line(pairs, lam0, "pe-series-original");
    ch.line(pairs, lam, "pe-series-main");
    ch.dots(pairs, lam, "pe-series-main-dots", lam.length > 96 ? 1 : 1.8);
    if (view.marker !== null && view.marker !== undefined) ch.marker(view.marker, lam[view.marker], "pe-marker");
    const items = [{ cls: "pe-series-main", label: view.label }];
    if (view.scaled) items.push({ cls: "pe-series-original", label: "original \u03bb\u1d62" });
    for (const line of lines) items.push({ cls: line.cls, label: line.legend });
    C.legend(panel.legend, items);
    return { lam, lam0 };
  }

  class Explorer {
    constructor(root) {
      this.root = root;
      this.id = `pe${++uid}`;
      this.kind = root.dataset.peWidget || "explorer";
      this.preset = PRESETS[this.kind] || PRESETS.explorer;
      this.context = this.preset.context !== false;
      this.zoo = null;
      this.state = { ...DEFAULTS };
      const d = root.dataset;
      const num = (v) => (v === undefined ? undefined : Number(v));
      const starting = {
        base: num(d.base),
        dim: num(d.dim),
        headDim: num(d.headDim),
        method: d.method,
        factor: num(d.factor),
        L0: num(d.l0),
        position: num(d.position),
        pair: num(d.pair),
        maxDistance: num(d.maxDistance),
      };
      for (const [key, value] of Object.entries(starting)) if (value !== undefined) this.state[key] = value;
      if (d.headDim === undefined && !this.preset.controls.includes("headDim")) this.state.headDim = this.state.dim;
      this.inputs = {};
      this.build();
      root.posencExplorer = this;
      this.update();
      if (d.zoo) this.loadZoo(d.zoo);
    }

    // -------------------------------------------------------------- layout

    build() {
      const root = this.root;
      root.textContent = "";
      root.classList.add("pe-ready");
      const controls = make("div", { class: "pe-controls", role: "group", "aria-label": "settings" }, root);
      this.controlsBox = controls;
      for (const name of this.preset.controls) this.buildControl(name, controls);
      this.error = make("p", { class: "pe-error", role: "alert", hidden: true }, root);
      this.note = make("p", { class: "pe-note-line", "aria-live": "polite", hidden: true }, root);
      const panels = make("div", { class: `pe-panels pe-panels-${this.preset.panels.length}` }, root);
      this.panels = {};
      for (const name of this.preset.panels) {
        const figure = make("figure", { class: `pe-panel pe-panel-${name}` }, panels);
        const title = make("p", { class: "pe-panel-title", id: `${this.id}-${name}-title` }, figure);
        const svg = C.el("svg", { role: "img", "aria-labelledby": `${this.id}-${name}-title`, class: "pe-svg" }, figure);
        // The decay panel stacks a second chart (the score) on the same distance axis.
        const svg2 = name === "decay" ? C.el("svg", { role: "img", "aria-label": "score of a key equal to its query against relative distance k", class: "pe-svg" }, figure) : null;
        const legend = make("div", { class: "pe-legend" }, figure);
        // Not a live region: a slider drag would read out every step. The slider's own
        // aria-valuetext says the value; the readout is there to be read.
        const readout = make("figcaption", { class: "pe-readout" }, figure);
        this.panels[name] = { figure, title, svg, svg2, legend, readout };
      }
    }

    buildControl(name, parent) {
      if (name === "family") return this.buildFamily(parent);
      if (name === "method") return this.buildMethod(parent);
      if (name === "methodExtras") return this.buildExtras(parent);
      this.buildNumeric(name, parent);
    }

    buildNumeric(name, parent) {
      const spec = NUMERIC[name];
      const box = make("div", { class: `pe-control pe-control-${name}` }, parent);
      const numberId = `${this.id}-${name}`;
      const label = (this.preset.labels || {})[name] || spec.label;
      make("label", { for: numberId }, box, label);
      const row = make("div", { class: "pe-control-row" }, box);
      let slider = null;
      if (!spec.number) {
        slider = make("input", {
          type: "range",
          min: spec.min,
          max: spec.max,
          step: spec.step,
          "aria-label": `${label} (slider)`,
          class: "pe-slider",
        }, row);
        slider.addEventListener("input", () => {
          const value = spec.fromSlider(Number(slider.value));
          this.set({ [name]: value }, { from: "slider" });
        });
      }
      const number = make("input", { type: "number", id: numberId, step: "any", inputmode: "decimal", class: "pe-number" }, row);
      number.addEventListener("change", () => {
        const raw = number.value.trim();
        const value = raw === "" ? NaN : Number(raw);
        this.set({ [name]: value }, { from: "number" });
      });
      this.inputs[name] = { box, slider, number, spec };
    }

    buildMethod(parent) {
      const box = make("div", { class: "pe-control pe-control-method" }, parent);
      const id = `${this.id}-method`;
      make("label", { for: id }, box, "scaling method");
      const select = make("select", { id }, box);
      for (const method of PR.METHODS) make("option", { value: method }, select, METHOD_NAMES[method]);
      select.addEventListener("change", () => this.chooseMethod(select.value));
      this.inputs.method = { box, select };
    }

    buildFamily(parent) {
      const box = make("div", { class: "pe-control pe-control-family" }, parent);
      const id = `${this.id}-family`;
      make("label", { for: id }, box, "load a released model");
      const select = make("select", { id }, box);
      make("option", { value: "" }, select, "(your own settings)");
      select.addEventListener("change", () => {
        if (select.value !== "") this.loadFamily(Number(select.value));
      });
      this.inputs.family = { box, select };
    }

    buildExtras(parent) {
      const box = make("fieldset", { class: "pe-extras" }, parent);
      this.extras = box;
      const legend = make("legend", {}, box, "method parameters");
      this.extrasLegend = legend;
      const yarnBox = make("div", { class: "pe-extra pe-extra-yarn" }, box);
      this.buildNumeric("betaFast", yarnBox);
      this.buildNumeric("betaSlow", yarnBox);
      const truncate = make("label", { class: "pe-check" }, yarnBox);
      const truncateBox = make("input", { type: "checkbox" }, truncate);
      truncate.append(" truncate (floor/ceil the range)");
      truncateBox.addEventListener("change", () => this.set({ truncate: truncateBox.checked }));
      this.inputs.truncate = { checkbox: truncateBox };
      const llamaBox = make("div", { class: "pe-extra pe-extra-llama3" }, box);
      this.buildNumeric("lowFreq", llamaBox);
      this.buildNumeric("highFreq", llamaBox);
      const longBox = make("div", { class: "pe-extra pe-extra-longrope" }, box);
      const sourceId = `${this.id}-longrope-source`;
      make("label", { for: sourceId }, longBox, "factor lists of");
      const source = make("select", { id: sourceId }, longBox);
      source.addEventListener("change", () => this.chooseLongropeSource(Number(source.value)));
      this.inputs.longropeSource = { select: source };
      const attentionBox = make("div", { class: "pe-extra pe-extra-attention" }, box);
      const overrideLabel = make("label", { class: "pe-check" }, attentionBox);
      const override = make("input", { type: "checkbox" }, overrideLabel);
      overrideLabel.append(" explicit attention factor a");
      const valueId = `${this.id}-attention`;
      const valueLabel = make("label", { for: valueId, class: "pe-visually-hidden" }, attentionBox, "attention factor a");
      const value = make("input", { type: "number", id: valueId, step: "any", class: "pe-number" }, attentionBox);
      override.addEventListener("change", () => {
        const a = Number(value.value);
        this.set({ attentionOverride: override.checked ? (Number.isFinite(a) && value.value !== "" ? a : 1) : null });
      });
      value.addEventListener("change", () => {
        if (override.checked) this.set({ attentionOverride: value.value === "" ? NaN : Number(value.value) });
      });
      this.inputs.attention = { checkbox: override, number: value, label: valueLabel };
      this.extraBoxes = { yarn: yarnBox, llama3: llamaBox, longrope: longBox, attention: attentionBox };
    }

    // -------------------------------------------------------------- zoo

    async loadZoo(url) {
      try {
        const response = await fetch(new URL(url, document.baseURI));
        if (!response.ok) throw new Error(`HTTP ${response.status}`);
        const data = await response.json();
        this.zoo = data.families;
      } catch (error) {
        this.showNote(`The model list could not be loaded (${error.message}); everything else works.`);
        return;
      }
      const family = this.inputs.family;
      if (family) {
        this.zoo.forEach((f, index) => {
          const label = `${f.name}${f.layer_type ? ` (${f.layer_type.replace("_attention", "")})` : ""}`;
          const option = make("option", { value: index, disabled: !f.supported }, family.select, label);
          if (!f.supported) option.textContent += " (not drawn here)";
        });
      }
      const sources = this.zoo.map((f, i) => [f, i]).filter(([f]) => f.supported && f.method === "longrope");
      const select = this.inputs.longropeSource?.select;
      if (select) for (const [f, i] of sources) make("option", { value: i }, select, f.name);
      if (sources.length && this.state.longropeSource === null) this.state.longropeSource = sources[0][1];
      this.ready = true;
      this.update();
      this.root.dataset.peZoo = String(this.zoo.length);
    }

    loadFamily(index) {
      const f = this.zoo[index];
      const sc = f.scaling || {};
      const next = {
        base: f.base,
        headDim: f.head_dim,
        dim: f.rotary_dim,
        method: f.method,
        factor: sc.factor ?? f.factor ?? 8,
        L0: f.context,
        attentionOverride: sc.attention_factor ?? null,
        betaFast: sc.beta_fast ?? 32,
        betaSlow: sc.beta_slow ?? 1,
        truncate: sc.truncate ?? true,
        lowFreq: sc.low_freq_factor ?? 1,
        highFreq: sc.high_freq_factor ?? 4,
        pair: Math.min(this.state.pair, f.rotary_dim / 2 - 1),
      };
      if (f.method === "longrope") next.longropeSource = index;
      this.set(next, { keepFamily: true });
      this.inputs.family.select.value = String(index);
      this.showNote(f.note);
    }

    chooseLongropeSource(index) {
      const f = this.zoo[index];
      // The lists have one entry per pair: they fix the rotary width.
      this.set({
        longropeSource: index,
        dim: f.rotary_dim,
        headDim: Math.max(this.state.headDim, f.rotary_dim),
        L0: f.context,
        factor: f.scaling.factor,
      });
    }

    chooseMethod(method) {
      const next = { method };
      if (method === "longrope" && this.zoo && this.state.longropeSource !== null) {
        const f = this.zoo[this.state.longropeSource];
        Object.assign(next, { dim: f.rotary_dim, headDim: Math.max(this.state.headDim, f.rotary_dim), L0: f.context, factor: f.scaling.factor });
      }
      this.set(next);
    }

    showNote(text) {
      this.note.hidden = !text;
      this.note.textContent = text || "";
    }

    // -------------------------------------------------------------- updates

    set(changes, { keepFamily = false } = {}) {
      Object.assign(this.state, changes);
      const s = this.state;
      // The rotary part is a part of the head: moving one width past the other moves both.
      if ("dim" in changes && Number.isInteger(s.dim) && s.dim > s.headDim) s.headDim = s.dim;
      if ("headDim" in changes && Number.isInteger(s.headDim) && s.headDim < s.dim && s.headDim >= 2) s.dim = s.headDim;
      if (!this.preset.controls.includes("headDim")) s.headDim = Math.max(s.headDim, s.dim);
      if (Number.isInteger(s.dim) && s.dim >= 2) s.pair = Math.min(s.pair, s.dim / 2 - 1);
      if (!keepFamily && this.inputs.family && !("position" in changes || "pair" in changes)) {
        this.inputs.family.select.value = "";
        this.showNote("");
      }
      this.update();
    }

    syncInputs() {
      const s = this.state;
      for (const [name, input] of Object.entries(this.inputs)) {
        if (!input.spec) continue;
        const value = s[name];
        if (input.number !== document.activeElement) input.number.value = Number.isFinite(value) ? String(value) : "";
        if (input.slider) {
          if (name === "dim") input.slider.max = String(Math.min(512, Math.max(s.headDim, 2)));
          if (name === "pair") input.slider.max = String(Math.max(0, Math.floor(s.dim / 2) - 1));
          if (Number.isFinite(value) && value >= 0) input.slider.value = String(input.spec.toSlider(value));
          input.slider.setAttribute("aria-valuetext", Number.isFinite(value) ? fmt(value, 6) : "invalid");
        }
      }
      if (this.inputs.method) this.inputs.method.select.value = s.method;
      if (this.inputs.truncate) this.inputs.truncate.checkbox.checked = s.truncate;
      if (this.inputs.attention) {
        const a = this.inputs.attention;
        a.checkbox.checked = s.attentionOverride !== null;
        a.number.disabled = s.attentionOverride === null;
        if (s.attentionOverride !== null && a.number !== document.activeElement) a.number.value = String(s.attentionOverride);
      }
      if (this.inputs.longropeSource && s.longropeSource !== null) this.inputs.longropeSource.select.value = String(s.longropeSource);
      const longrope = s.method === "longrope";
      if (this.inputs.dim) {
        this.inputs.dim.number.disabled = longrope;
        if (this.inputs.dim.slider) this.inputs.dim.slider.disabled = longrope;
      }
      if (this.extras) {
        const show = { yarn: s.method === "yarn", llama3: s.method === "llama3", longrope, attention: s.method === "yarn" || longrope };
        for (const [key, box] of Object.entries(this.extraBoxes)) box.hidden = !show[key];
        this.extras.hidden = !Object.values(show).some(Boolean);
      }
      for (const name of ["factor", "L0"]) {
        const input = this.inputs[name];
        if (input) input.box.classList.toggle("pe-inactive", s.method === "none" && (name === "factor" || !this.context));
      }
    }

    update() {
      this.syncInputs();
      let result;
      try {
        result = compute(this.state, this.zoo, this.preset);
      } catch (error) {
        this.error.hidden = false;
        this.error.textContent = error.message;
        this.root.classList.add("pe-invalid");
        this.result = null;
        return;
      }
      this.error.hidden = true;
      this.error.textContent = "";
      this.root.classList.remove("pe-invalid");
      this.result = result;
      for (const name of this.preset.panels) this[`draw_${name}`](this.panels[name], result);
    }

    // -------------------------------------------------------------- panels

    draw_head(panel, r) {
      const s = this.state;
      const pairs = s.headDim / 2;
      const rotated = s.dim / 2;
      panel.title.textContent = `The head: ${s.headDim} coordinates = ${pairs} pairs`;
      const width = 360;
      const height = 34;
      const svg = panel.svg;
      while (svg.firstChild) svg.removeChild(svg.firstChild);
      svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
      const cell = (width - 2) / pairs;
      const kinds = pairKinds(r.omega, r.invFreq, s.L0, s.method === "none" ? null : this.extendedLength());
      for (let i = 0; i < pairs; i++) {
        const cls = i >= rotated ? "pe-cell-pass" : this.context ? `pe-cell-${kinds[i]}` : "pe-cell-fast";
        C.el("rect", { x: 1 + i * cell, y: 6, width: Math.max(cell - (cell > 3 ? 0.6 : 0), 0.4), height: 22, class: cls, "data-pair": i }, svg);
      }
      C.el("rect", { x: 1 + r.pair * cell - 0.8, y: 3, width: cell + 1.6, height: 28, class: "pe-cell-chosen" }, svg);
      const count = (kind) => kinds.filter((k) => k === kind).length;
      const items = [{ cls: "pe-cell-fast", label: this.context ? "\u2265 1 turn within L\u2080 in pre-training" : "rotated" }];
      if (this.context) {
        items.push({ cls: "pe-cell-slow", label: "< 1 turn: leaves the angles seen before s\u00b7L\u2080" });
        if (s.method !== "none") items.push({ cls: "pe-cell-kept", label: "< 1 turn, kept within them by the method" });
      }
      items.push({ cls: "pe-cell-pass", label: "not rotated" }, { cls: "pe-cell-chosen", label: `pair i = ${r.pair}` });
      C.legend(panel.legend, items);
      let text = `Pairs 0 to ${rotated - 1} rotate (rotary width d = ${s.dim}). ` +
        (rotated < pairs ? `The last ${s.headDim - s.dim} coordinates pass through unrotated, so their part of the score does not depend on distance. ` : "");
      if (this.context) {
        text += `In pre-training, ${count("fast")} of ${rotated} rotated pairs complete at least one full turn within L\u2080 = ${s.L0} positions; ` +
          `the other ${rotated - count("fast")} never see their whole circle and are the first to break past L\u2080.`;
        if (s.method !== "none") {
          text += ` With ${METHOD_NAMES[s.method]}'s frequencies, ${count("kept")} of them stay within the angles they saw up to s\u00b7L\u2080 = ${fmt(this.extendedLength())}, and ${count("slow")} do not.`;
        }
      }
      panel.readout.textContent = text;
    }

    // The length a method extends to: s·L0 (L0 itself without a method).
    extendedLength() {
      const s = this.state;
      return s.method === "none" ? s.L0 : s.factor * s.L0;
    }

    draw_wavelengths(panel, r) {
      const s = this.state;
      const scaledDiffers = s.method !== "none";
      const extended = scaledDiffers ? s.factor * s.L0 : null;
      const lines = [];
      if (this.context) {
        lines.push({ value: s.L0, cls: "pe-context", label: `L\u2080 = ${fmt(s.L0)}`, legend: "original context L\u2080" });
        if (extended) {
          const label = `s\u00b7L\u2080 = ${fmt(extended)}`;
          lines.push({ value: extended, cls: "pe-extended", label, legend: "extended context s\u00b7L\u2080", drawn: extended !== s.L0 });
        }
      }
      const { lam } = drawWavelengths(panel, {
        invFreq: r.invFreq,
        omega: r.omega,
        scaled: scaledDiffers,
        label: scaledDiffers ? `${METHOD_NAMES[s.method]}` : "\u03bb\u1d62 = 2\u03c0 n^(2i/d)",
        lines,
        marker: this.preset.controls.includes("pair") ? r.pair : null,
      });
      const last = lam.length - 1;
      let text = `\u03bb\u2080 = ${fmt(lam[0])}` + (last > 0 ? `, \u03bb${subscript(last)} = ${fmt(lam[last])}` : "") + "; " +
        `ratio between neighbours n^(2/d) = ${fmt(Math.pow(s.base, 2 / s.dim), 6)}.`;
      if (this.context) {
        // Said with the frequencies it counts: the head panel colours from the pre-training ones.
        const within = PR.fullTurns(r.invFreq, s.L0);
        text += scaledDiffers
          ? ` With ${METHOD_NAMES[s.method]}'s frequencies ${within} of ${lam.length} pairs turn at least once within L\u2080 (${PR.fullTurns(r.omega, s.L0)} in pre-training).`
          : ` ${within} of ${lam.length} pairs turn at least once within L\u2080.`;
      }
      if (r.yarnRange) {
        const { low, high } = r.yarnRange;
        text += ` YaRN ramp between pair indices ${fmt(low, 6)} and ${fmt(high, 6)}.`;
      }
      panel.readout.textContent = text;
    }

    draw_rotation(panel, r) {
      const s = this.state;
      const i = r.pair;
      const a = r.attentionFactor;
      const w = r.invFreq[i];
      const w0 = r.omega[i];
      const angle = s.position * w;
      const svg = panel.svg;
      while (svg.firstChild) svg.removeChild(svg.firstChild);
      const size = 240;
      const c = size / 2;
      const R = (size / 2 - 18) / Math.max(1, a);
      svg.setAttribute("viewBox", `0 0 ${size} ${size}`);
      const P = (radius, theta) => [c + radius * R * Math.cos(theta), c - radius * R * Math.sin(theta)];
      panel.title.textContent = `Pair ${i} at position ${s.position}`;
      C.el("line", { x1: 6, x2: size - 6, y1: c, y2: c, class: "pe-axis-thin" }, svg);
      C.el("line", { y1: 6, y2: size - 6, x1: c, x2: c, class: "pe-axis-thin" }, svg);
      C.el("circle", { cx: c, cy: c, r: R, class: "pe-circle" }, svg);
      if (a !== 1) C.el("circle", { cx: c, cy: c, r: R * a, class: "pe-circle-a" }, svg);
      // The arc this pair swept during pre-training: positions 0 .. L0 - 1, each with the step
      // after it, [0, L0 * omega_i): the whole circle exactly when the pair makes >= 1 turn.
      let seen = null;
      if (this.context) {
        seen = s.L0 * w0;
        if (seen >= TWO_PI) {
          C.el("circle", { cx: c, cy: c, r: R, class: "pe-seen" }, svg);
        } else if (seen > 0) {
          const [x1, y1] = P(1, 0);
          const [x2, y2] = P(1, seen);
          C.el("path", { d: `M${x1},${y1} A${R},${R} 0 ${seen > Math.PI ? 1 : 0} 0 ${x2},${y2}`, class: "pe-seen" }, svg);
        }
      }
      // The previous positions, fading: how far the pair turns per position.
      for (let k = 6; k >= 1; k--) {
        if (s.position - k < 0) continue;
        const [x, y] = P(a, (s.position - k) * w);
        C.el("circle", { cx: x, cy: y, r: 2.6, class: "pe-trail", "fill-opacity": (0.15 + 0.1 * (6 - k)).toFixed(2) }, svg);
      }
      if (s.method !== "none") {
        const [ox, oy] = P(1, s.position * w0);
        C.el("circle", { cx: ox, cy: oy, r: 4.5, class: "pe-unscaled" }, svg);
      }
      const [x, y] = P(a, angle);
      C.el("line", { x1: c, y1: c, x2: x, y2: y, class: "pe-vector" }, svg);
      C.el("circle", { cx: x, cy: y, r: 5, class: "pe-point" }, svg);
      const items = [
        { cls: "pe-point", label: `at m = ${s.position}` },
        { cls: "pe-trail", label: "m \u2212 1 \u2026 m \u2212 6" },
      ];
      if (s.method !== "none") items.push({ cls: "pe-unscaled", label: "without scaling" });
      if (this.context) items.push({ cls: "pe-seen", label: "angles seen in pre-training" });
      C.legend(panel.legend, items);
      const turns = angle / TWO_PI;
      let text = `\u03c9${s.method === "none" ? "" : "\u2032"}\u1d62 = ${fmt(w, 6)} rad per position; angle m\u03c9 = ${fmt(angle, 6)} rad = ${fmt(turns, 5)} turns; ` +
        (a !== 1 ? `a\u00b7(cos, sin) with a = ${fmt(a, 6)}: ` : "(cos, sin) = ") +
        `(${fmt(r.cos[i], 5)}, ${fmt(r.sin[i], 5)}).`;
      if (this.context) {
        const known = angleSeen(angle, w0, s.L0);
        text += known
          ? " This angle lies on the arc the pair swept during pre-training."
          : ` Out of the pre-training range: within L\u2080 this pair only swept [0, ${fmt(seen, 4)}) rad.`;
      }
      panel.readout.textContent = text;
    }

    draw_decay(panel, r) {
      const s = this.state;
      const ds = r.distances;
      const far = ds[ds.length - 1];
      const top = Math.max(...r.bound, ...(r.boundOriginal || [])) * 1.05;
      panel.title.textContent = "Long-term decay against relative distance k = |p \u2212 m|";
      const showPosition = this.preset.controls.includes("position") && s.position >= 1 && s.position <= far;
      const bound = C.chart(panel.svg, {
        height: 180,
        margin: { b: 22 },
        x: { min: 1, max: far, log: true },
        y: { min: 0, max: top, label: "mean |S\u2097|" },
      });
      if (this.context) bound.vline(s.L0, "pe-context", "L\u2080");
      if (r.boundOriginal) bound.line(ds, r.boundOriginal, "pe-series-original");
      bound.line(ds, r.bound, "pe-series-main");
      if (showPosition) {
        bound.vline(s.position, "pe-position");
        bound.marker(s.position, r.boundAtPosition, "pe-marker");
      }
      const low = Math.min(-0.2, Math.min(...r.score) * 1.1);
      const score = C.chart(panel.svg2, {
        height: 130,
        margin: { t: 6 },
        x: { min: 1, max: far, log: true, label: "relative distance k (log scale)" },
        y: { min: low, max: 1.08, label: "score / N", ticks: C.linearTicks(low, 1.08, 3) },
      });
      score.hline(0, "pe-zero");
      if (this.context) score.vline(s.L0, "pe-context");
      score.line(ds, r.score, "pe-series-score");
      if (showPosition) {
        score.vline(s.position, "pe-position");
        score.marker(s.position, r.scoreAtPosition, "pe-marker");
      }
      const items = [
        { cls: "pe-series-main", label: "bound: mean of |S\u2097| (RoFormer)" },
        { cls: "pe-series-score", label: "score of key = query, \u03a3\u1d62 cos(k\u03c9\u1d62) / N" },
      ];
      if (r.boundOriginal) items.push({ cls: "pe-series-original", label: "bound without scaling" });
      C.legend(panel.legend, items);
      const N = r.invFreq.length;
      let text = `At distance 0 the bound is (N + 1)/2 = ${fmt((N + 1) / 2)} and the score is 1 (N = ${N} pairs); |score| never exceeds the bound.`;
      if (r.boundAtPosition !== undefined && showPosition) {
        text += ` At distance ${s.position}: bound ${fmt(r.boundAtPosition, 5)}, score ${fmt(r.scoreAtPosition, 5)}.`;
      }
      if (r.attentionFactor !== 1) text += ` The attention factor multiplies every score by a\u00b2 = ${fmt(r.attentionFactor ** 2, 5)}.`;
      panel.readout.textContent = text;
    }

    draw_attention(panel, r) {
      const s = this.state;
      const sMax = Math.max(128, s.factor * 1.5);
      const xs = geometric(100, sMax * 100, 120).map((v) => v / 100);
      const yarnCurve = xs.map((x) => PR.yarnMscale(x));
      const longCurve = xs.map((x) => PR.longropeAttentionFactor(x, Math.max(s.L0, 2)));
      const a = r.attentionFactor;
      const top = Math.max(...yarnCurve, ...longCurve, a) * 1.05;
      const bottom = Math.min(0.95, a * 0.95);
      panel.title.textContent = "Attention factor a (multiplies cos and sin)";
      const ch = C.chart(panel.svg, {
        x: { min: 1, max: sMax, log: true, label: "factor s (log scale)" },
        y: { min: bottom, max: top, label: "a" },
      });
      ch.hline(1, "pe-series-none");
      ch.line(xs, yarnCurve, s.method === "yarn" ? "pe-series-main" : "pe-series-faint");
      ch.line(xs, longCurve, s.method === "longrope" ? "pe-series-main" : "pe-series-faint-2");
      ch.marker(s.method === "none" ? 1 : s.factor, a, "pe-marker");
      C.legend(panel.legend, [
        { cls: s.method === "yarn" ? "pe-series-main" : "pe-series-faint", label: "YaRN: 0.1 ln s + 1" },
        { cls: s.method === "longrope" ? "pe-series-main" : "pe-series-faint-2", label: "LongRoPE: \u221a(1 + ln s / ln L\u2080)" },
        { cls: "pe-series-none", label: "other methods: 1" },
      ]);
      const explicit = s.attentionOverride !== null && (s.method === "yarn" || s.method === "longrope");
      panel.readout.textContent =
        `a = ${fmt(a, 8)}${explicit ? " (explicit, from the settings)" : ""}; ` +
        `attention logits are multiplied by a\u00b2 = ${fmt(a * a, 8)}.`;
    }
  }

  function init() {
    for (const root of document.querySelectorAll(".pe-widget:not(.pe-ready)")) {
      try {
        new Explorer(root);
      } catch (error) {
        root.textContent = `This widget failed to start: ${error.message}`;
        throw error;
      }
    }
  }

  window.posencExplorer = { compute, methodParams, Explorer, init, drawWavelengths };
  // document$ (Material) fires on the first load and after every instant navigation.
  if (window.document$) window.document$.subscribe(init);
  else if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
