// "Read your config" (read_config.md): a config.json, dropped, chosen or pasted, read by
// posenc_ref's own command line running in this browser.
//
// Markup: <div class="rc-reader" data-pyodide="../vendor/pyodide/" data-reader="...zip"
// data-worker="...read_config_worker.js" data-pyodide-mb="13">. Python (Pyodide) runs in a Web
// Worker (read_config_worker.js), started the first time a config is read, never before: the
// page itself loads nothing heavy. The file goes to the worker and nowhere else.
//
// What is shown comes from the command line's own output: `inspect --json` (rendered, linked to
// the pages that explain each part, drawn with the explorer's wavelength panel, and offered for
// download byte for byte) and `inspect`'s text (shown as printed). A refusal is the command
// line's message, word for word. The last reading is kept on the element (element.posencReading),
// its state in data-rc-state, for the browser test (tests/site/test_read_config.py).
(function () {
  "use strict";

  const C = window.posencCharts;
  const PR = window.posencRef;
  const EX = window.posencExplorer;

  // --------------------------------------------------------------- where each part is explained

  // Relative to this page (read_config/): the browser test follows every link a reading shows.
  const EXPLAINED = {
    kinds: "../encodings/#encodings-kinds",
    rope: "../rope/",
    layout: "../rope/#rope-layouts",
    partial: "../rope/#rope-partial",
    base: "../rope/#rope-frequencies",
    context: "../rope_scaling/#scaling-why",
    attention: "../rope_scaling/#scaling-yarn",
    softmax: "../rope_scaling/#scaling-yarn-conventions",
    mrope: "../rope/#rope-mrope",
    nope: "../models/#models-nope",
    queryScale: "../models/#models-query-scale",
    mla: "../models/#models-mla",
    sparse: "../models/#models-sparse",
    freqScales: "../models/#models-lerope",
    layerTypes: "../models/#models-variants",
    axial: "../axial/#axial-configs",
    cli: "../cli/#cli-json",
  };
  // posenc_ref.rope_scaling's methods -> their sections on the context-extension page.
  const SCALING = {
    linear: "../rope_scaling/#scaling-linear",
    ntk_aware: "../rope_scaling/#scaling-ntk",
    dynamic_ntk: "../rope_scaling/#scaling-dynamic-ntk",
    yarn: "../rope_scaling/#scaling-yarn",
    llama3: "../rope_scaling/#scaling-llama3",
    longrope: "../rope_scaling/#scaling-longrope",
  };
  // The encoding kinds (Encoding.kind) -> the section that derives each.
  const KINDS = {
    rope: ["RoPE (rotary position embeddings)", "../rope/"],
    learned: ["learned absolute positions", "../relative/#relative-learned"],
    sinusoidal: ["sinusoidal absolute positions", "../absolute/#sinusoidal-definition"],
    alibi: ["ALiBi (a linear bias by distance)", "../relative/#relative-alibi"],
    t5: ["T5 relative buckets", "../relative/#relative-t5"],
    relative_key: ["learned relative keys (Shaw et al.)", "../relative/#relative-shaw"],
    nope: ["no positional encoding (NoPE)", "../beyond_rope/#beyond-nope"],
    axial: ["axial 2-D RoPE (a vision tower)", "../axial/"],
  };

  // --------------------------------------------------------------- small DOM helpers

  function make(tag, attrs = {}, parent = null, text = null) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs)) {
      if (value === null || value === undefined || value === false) continue;
      if (key === "class") node.className = value;
      else node.setAttribute(key, value === true ? "" : String(value));
    }
    if (text !== null) node.textContent = text; // never innerHTML: a config is untrusted text
    if (parent) parent.appendChild(node);
    return node;
  }

  function link(parent, text, href) {
    return make("a", { href, class: "rc-explained" }, parent, text);
  }

  function code(parent, text) {
    return make("code", {}, parent, text);
  }

  // A value as the JSON holds it, for a reader: numbers as JavaScript writes them, lists joined.
  function show(value) {
    if (value === null || value === undefined) return "none";
    if (Array.isArray(value)) return value.length > 12 ? `[${value.slice(0, 12).map(show).join(", ")}, \u2026] (${value.length})` : `[${value.map(show).join(", ")}]`;
    if (typeof value === "object") return Object.entries(value).map(([k, v]) => `${k} ${show(v)}`).join(", ");
    return String(value);
  }

  const seconds = (ms) => (ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(ms < 10000 ? 1 : 0)} s`);
  const subscript = (k) => String(k).replace(/\d/g, (c) => String.fromCharCode(0x2080 + Number(c)));

  // --------------------------------------------------------------- the worker (one per visit)

  // Kept across Material's instant navigation: leaving the page and coming back does not load
  // Python again. A worker whose Python failed beyond repair is dropped; the next read starts
  // another.
  let shared = null;

  function startWorker(urls, onStage) {
    const worker = new Worker(urls.worker, { type: "module" }); // Pyodide needs a module worker
    const state = { worker, pending: new Map(), next: 1, dead: false, onStage, info: null };
    const call = (message, transfer = []) =>
      new Promise((resolve, reject) => {
        if (state.dead) {
          reject(new Error("Python stopped"));
          return;
        }
        const id = state.next++;
        state.pending.set(id, { resolve, reject });
        worker.postMessage({ id, ...message }, transfer);
      });
    const fail = (message) => {
      state.dead = true;
      for (const { reject } of state.pending.values()) reject(new Error(message));
      state.pending.clear();
      worker.terminate();
    };
    worker.onmessage = (event) => {
      const data = event.data;
      if (data.type === "stage") {
        state.onStage(data.stage);
        return;
      }
      const waiting = state.pending.get(data.id);
      if (!waiting) return;
      state.pending.delete(data.id);
      if (data.type === "failed") {
        if (data.fatal) fail(data.message);
        waiting.reject(new Error(data.message));
      } else {
        waiting.resolve(data);
      }
    };
    worker.onerror = (event) => {
      event.preventDefault();
      fail(event.message || "the worker failed");
    };
    state.call = call;
    state.ready = call({ type: "start", pyodide: urls.pyodide, reader: urls.reader }).then((info) => {
      state.info = info;
      return info;
    });
    state.ready.catch(() => fail("Python did not start"));
    return state;
  }

  // --------------------------------------------------------------- the reader widget

  class Reader {
    constructor(root) {
      this.root = root;
      const base = document.baseURI;
      const d = root.dataset;
      this.urls = {
        pyodide: new URL(d.pyodide, base).href,
        reader: new URL(d.reader, base).href,
        worker: new URL(d.worker, base).href,
      };
      this.pyodideMb = d.pyodideMb;
      this.outcomes = 0;
      this.last = null; // {name, file?: File, bytes?: Uint8Array}: what a changed option re-reads
      this.build();
      root.posencReader = this;
      this.setState("idle");
    }

    build() {
      const root = this.root;
      root.textContent = "";
      root.classList.add("rc-ready");
      const input = make("div", { class: "rc-input" }, root);
      const drop = make("div", { class: "rc-drop" }, input);
      make("p", { class: "rc-drop-text" }, drop, "Drop a config.json here, or a model's folder (its config.json is read).");
      const buttons = make("div", { class: "rc-buttons" }, drop);
      const fileButton = make("button", { type: "button", class: "md-button md-button--primary" }, buttons, "Choose a file\u2026");
      const folderButton = make("button", { type: "button", class: "md-button" }, buttons, "Choose a folder\u2026");
      this.fileInput = make("input", { type: "file", accept: ".json,application/json", class: "rc-hidden", "aria-label": "config.json file" }, drop);
      this.folderInput = make("input", { type: "file", webkitdirectory: true, class: "rc-hidden", "aria-label": "model folder" }, drop);
      fileButton.addEventListener("click", () => this.fileInput.click());
      folderButton.addEventListener("click", () => this.folderInput.click());
      this.fileInput.addEventListener("change", () => {
        const [file] = this.fileInput.files;
        if (file) this.readFile(file, file.name);
        this.fileInput.value = "";
      });
      this.folderInput.addEventListener("change", () => {
        this.readFolderFiles(Array.from(this.folderInput.files));
        this.folderInput.value = "";
      });
      for (const name of ["dragenter", "dragover"]) {
        drop.addEventListener(name, (event) => {
          event.preventDefault();
          drop.classList.add("rc-drag");
        });
      }
      drop.addEventListener("dragleave", () => drop.classList.remove("rc-drag"));
      drop.addEventListener("drop", (event) => {
        event.preventDefault();
        drop.classList.remove("rc-drag");
        this.readDropped(event.dataTransfer);
      });

      const paste = make("details", { class: "rc-paste" }, input);
      make("summary", {}, paste, "\u2026or paste its text");
      const pasteId = `rc-paste-${Math.random().toString(36).slice(2, 8)}`;
      make("label", { for: pasteId, class: "rc-visually-hidden" }, paste, "config.json text");
      this.textarea = make("textarea", { id: pasteId, rows: 8, spellcheck: "false", placeholder: '{"model_type": "llama", "hidden_size": 4096, ...}' }, paste);
      const pasteButton = make("button", { type: "button", class: "md-button" }, paste, "Read the pasted text");
      pasteButton.addEventListener("click", () => {
        this.readBytes("config.json", new TextEncoder().encode(this.textarea.value));
      });

      const options = make("div", { class: "rc-options" }, input);
      const layoutId = `rc-layout-${Math.random().toString(36).slice(2, 8)}`;
      make("label", { for: layoutId }, options, "pair layout ");
      this.layout = make("select", { id: layoutId }, options);
      make("option", { value: "" }, this.layout, "as the family's code decides");
      make("option", { value: "half" }, this.layout, "half (--layout half)");
      make("option", { value: "interleaved" }, this.layout, "interleaved (--layout interleaved)");
      make("span", { class: "rc-option-note" }, options, " for a model_type posenc_ref does not know");
      this.layout.addEventListener("change", () => {
        if (this.last) this.read(this.last);
      });

      const status = make("div", { class: "rc-status", role: "status", "aria-live": "polite" }, root);
      this.progress = make("progress", { class: "rc-progress", hidden: true, "aria-label": "loading" }, status);
      this.statusText = make("span", {}, status);
      this.error = make("p", { class: "rc-error", role: "alert", hidden: true }, root);
      this.result = make("section", { class: "rc-result", hidden: true, "aria-label": "the reading" }, root);
    }

    flags() {
      return this.layout.value ? ["--layout", this.layout.value] : [];
    }

    // The state (idle, loading, reading, done, refused, error) and, for the browser test, how
    // many reads have ended (an answer or an error): it waits for that count to grow.
    setState(state) {
      this.root.dataset.rcState = state;
      if (state === "done" || state === "refused" || state === "error") {
        this.outcomes += 1;
        this.root.dataset.rcOutcomes = String(this.outcomes);
      }
    }

    say(text, busy = false) {
      this.statusText.textContent = text;
      this.progress.hidden = !busy;
    }

    // A message of the page's own (a folder without config.json, Python that stopped): the
    // last reading goes, so that nothing on screen answers another file.
    fail(text) {
      this.say("");
      this.result.hidden = true;
      this.error.hidden = false;
      this.error.textContent = text;
      this.setState("error");
    }

    // ------------------------------------------------------------- what was given

    readFile(file, name) {
      this.read({ name, file });
    }

    readBytes(name, bytes) {
      this.read({ name, bytes });
    }

    // A folder's files (from the folder button): its own config.json, as `inspect FOLDER` reads.
    readFolderFiles(files) {
      if (!files.length) return;
      const folder = (files[0].webkitRelativePath || "").split("/")[0] || "the folder";
      const config = files.find((f) => f.webkitRelativePath === `${folder}/config.json`);
      if (config) this.readFile(config, "config.json");
      else this.fail(`${folder} holds no config.json at its top level: give the model's folder, or its config.json.`);
    }

    readDropped(transfer) {
      const items = Array.from(transfer.items || []).filter((item) => item.kind === "file");
      const entries = items.map((item) => (item.webkitGetAsEntry ? item.webkitGetAsEntry() : null));
      if (entries.length === 1 && entries[0] && entries[0].isDirectory) {
        const folder = entries[0];
        const listing = folder.createReader();
        // readEntries answers in batches (100 in Chromium): a folder of many shards takes several.
        const next = () =>
          listing.readEntries(
            (children) => {
              const config = children.find((c) => c.isFile && c.name === "config.json");
              if (config) config.file((file) => this.readFile(file, "config.json"), (e) => this.fail(`${folder.name}/config.json could not be opened (${e.message}).`));
              else if (children.length) next();
              else this.fail(`${folder.name} holds no config.json at its top level: drop the model's folder, or its config.json.`);
            },
            (e) => this.fail(`${folder.name} could not be listed (${e.message}).`),
          );
        next();
        return;
      }
      const files = Array.from(transfer.files || []);
      if (files.length === 1) this.readFile(files[0], files[0].name);
      else if (files.some((f) => f.name === "config.json")) this.readFile(files.find((f) => f.name === "config.json"), "config.json");
      else if (files.length) this.fail(`${files.length} files were dropped: drop one config.json, or the folder that holds it.`);
    }

    // ------------------------------------------------------------- reading

    async read(given) {
      this.last = given;
      this.error.hidden = true;
      this.setState("reading");
      const started = performance.now();
      let timer = null;
      try {
        if (!shared || shared.dead) {
          this.setState("loading");
          const tick = (what) => {
            const passed = seconds(performance.now() - started);
            this.say(`${what} ${passed}`, true);
          };
          let stage = `Loading Python into this page (Pyodide, ${this.pyodideMb} MB, only the first time)\u2026`;
          shared = startWorker(this.urls, (name) => {
            if (name === "reader") stage = "Loading posenc_ref's reader\u2026";
            tick(stage);
          });
          tick(stage);
          timer = setInterval(() => tick(stage), 250);
        }
        const info = await shared.ready;
        clearInterval(timer);
        this.setState("reading");
        this.say(`Reading ${given.name}\u2026`, true);
        // Past the command line's limit it refuses by the size alone, so more is never sent.
        const limit = info.maxBytes + 1;
        const bytes = given.bytes
          ? given.bytes.slice(0, limit)
          : new Uint8Array(await given.file.slice(0, limit).arrayBuffer());
        const began = performance.now();
        const answer = await shared.call({ type: "read", name: given.name, bytes, flags: this.flags() }, [bytes.buffer]);
        this.show(answer.result, performance.now() - began, info);
      } catch (error) {
        clearInterval(timer);
        const gone = !shared || shared.dead;
        this.fail(
          gone
            ? `Python stopped while reading ${given.name} (${error.message}); the next file starts it afresh.`
            : `${given.name} could not be read: ${error.message}`,
        );
      }
    }

    // ------------------------------------------------------------- showing a reading

    show(result, ms, info) {
      const run = result.json;
      const box = this.result;
      box.textContent = "";
      box.hidden = false;
      const command = `posenc-ref inspect ${this.flags().map((f) => `${f} `).join("")}${result.name}`;
      const head = make("p", { class: "rc-command" }, box);
      code(head, command);
      if (run.status !== 0) {
        this.root.posencReading = { name: result.name, json: run, text: null };
        const refusal = make("div", { class: "rc-refusal" }, box);
        make("p", {}, refusal, run.status === 3 ? "The command line failed on this config, and says:" : "The command line refuses this config, and says:");
        make("pre", { class: "rc-message" }, refusal, (run.stderr || run.stdout).trimEnd());
        this.say(`Read ${result.name} in ${seconds(ms)}: refused.`);
        this.setState("refused");
        return;
      }
      const doc = JSON.parse(run.stdout);
      this.root.posencReading = { name: result.name, json: run, text: result.text, doc };
      const actions = make("p", { class: "rc-actions" }, box);
      const download = make("a", { class: "md-button", download: `${result.name.replace(/\.json$/i, "")}.inspect.json` }, actions, "Download the --json output");
      download.href = URL.createObjectURL(new Blob([run.stdout], { type: "application/json" }));
      const note = make("span", { class: "rc-action-note" }, actions, "what ");
      code(note, "inspect --json");
      note.append(" prints, as a file (");
      link(note, "its fields", EXPLAINED.cli);
      note.append(")");
      this.showEncoding(box, doc.encoding);
      if (doc.vision_tower) this.showAxial(box, doc.vision_tower, "Its vision tower");
      const text = make("details", { class: "rc-text" }, box);
      const summary = make("summary", {}, text, "What ");
      code(summary, command);
      summary.append(" prints");
      make("pre", {}, text, result.text.stdout.trimEnd());
      this.say(`Read ${result.name} in ${seconds(ms)} with posenc_ref ${info.posenc} on Python ${info.python} (Pyodide), in this browser.`);
      this.setState("done");
    }

    showEncoding(box, enc) {
      if (enc.kind === "axial") {
        this.showAxial(box, enc.parameters, "A vision tower's RoPE", enc);
        return;
      }
      const facts = this.facts(box, "rc-encoding");
      const [words, href] = KINDS[enc.kind] || [enc.kind, EXPLAINED.kinds];
      const kind = facts.row("encoding");
      link(kind, words, href);
      facts.row("family (model_type)", enc.model_type === null ? "none given" : enc.model_type);
      const source = facts.row("decided by");
      code(source, enc.source);
      this.notes(box, enc.notes, "Notes");
      if (enc.kind !== "rope") {
        for (const [key, value] of Object.entries(enc.parameters || {})) facts.row(key, show(value));
        return;
      }
      if (enc.rope.length > 1) {
        const types = facts.row("layer types");
        types.append(`${enc.rope.length}, one RoPE each: `);
        enc.layer_types.forEach((t, i) => {
          if (i) types.append(", ");
          code(types, String(t));
        });
        types.append(" (");
        link(types, "what a model does around the rotation", EXPLAINED.layerTypes);
        types.append(")");
      }
      enc.rope.forEach((spec, i) => this.showRope(box, spec, enc.layer_types[i], enc.rope.length > 1));
    }

    facts(parent, cls) {
      const table = make("table", { class: `rc-facts ${cls}` }, parent);
      const body = make("tbody", {}, table);
      return {
        table,
        row(name, text = null) {
          const tr = make("tr", {}, body);
          make("th", { scope: "row" }, tr, name);
          return make("td", {}, tr, text);
        },
      };
    }

    notes(parent, notes, title) {
      if (!notes || !notes.length) return;
      make("p", { class: "rc-notes-title" }, parent, title);
      const list = make("ul", { class: "rc-notes" }, parent);
      for (const note of notes) make("li", {}, list, note);
    }

    showRope(box, spec, layerType, several) {
      const section = make("div", { class: "rc-rope" }, box);
      if (several) {
        const title = make("p", { class: "rc-rope-title" }, section, "Layer type ");
        code(title, String(layerType));
      }
      const facts = this.facts(section, "rc-rope-facts");
      const layout = facts.row("pair layout");
      code(layout, spec.layout);
      layout.append(spec.layout === "half" ? ": pair i is (i, i + d/2), transformers' rotate_half " : ": pair i is (2i, 2i + 1), as in the RoFormer paper ");
      layout.append("(");
      link(layout, "the two layouts", EXPLAINED.layout);
      layout.append(")");
      const widths = facts.row("widths");
      widths.append(`head_dim ${spec.head_dim}, rotary_dim ${spec.rotary_dim}: `);
      if (spec.rotary_dim < spec.head_dim) {
        link(widths, "partial rotary", EXPLAINED.partial);
        widths.append(`, the first ${spec.rotary_dim} of ${spec.head_dim} coordinates rotate`);
      } else {
        widths.append(spec.nope_dim ? "every coordinate of the rope part rotates" : "every coordinate rotates");
      }
      const base = facts.row("base");
      base.append(`${show(spec.base)} (`);
      link(base, "the frequencies", EXPLAINED.base);
      base.append(` \u03c9\u1d62 = base^(\u22122i/${spec.rotary_dim}))`);
      const scaling = facts.row("scaling");
      code(scaling, `rope_type ${spec.rope_type}`);
      if (spec.scaling) {
        scaling.append(": ");
        const href = SCALING[spec.scaling.method];
        if (href) link(scaling, spec.scaling.method, href);
        else code(scaling, spec.scaling.method);
        const params = Object.entries(spec.scaling.params || {});
        if (params.length) scaling.append(` with ${params.map(([k, v]) => `${k} ${show(v)}`).join(", ")}`);
      } else {
        scaling.append(": none, the frequencies are the base's");
      }
      if (spec.length_dependent) scaling.append(`; the frequencies change with the sequence length${spec.varies_past ? ` past ${spec.varies_past}` : ""}`);
      const context = facts.row("context");
      context.append(`original ${show(spec.original_max_len)}, max_position_embeddings ${show(spec.max_len)} (`);
      link(context, "why it matters", EXPLAINED.context);
      context.append(")");
      const attention = facts.row("attention factor");
      attention.append(`${show(spec.attention_factor)}, multiplied into cos and sin (`);
      link(attention, "the attention factor", EXPLAINED.attention);
      attention.append(")");
      if (spec.softmax_scale_factor !== 1) {
        const softmax = facts.row("softmax scale");
        softmax.append(`${show(spec.softmax_scale_factor)} times the usual, outside the rotation (`);
        link(softmax, "why", EXPLAINED.softmax);
        softmax.append(")");
      }
      this.optionalFacts(facts, spec);
      this.notes(section, spec.notes, several ? `Notes on ${layerType}` : "Notes on its RoPE");
      this.chart(section, spec);
    }

    // Facts only some families have, each linked to the section that explains it.
    optionalFacts(facts, spec) {
      const linked = (name, text, words, href) => {
        const cell = facts.row(name, `${text} (`);
        link(cell, words, href);
        cell.append(")");
      };
      if (spec.mrope_section) linked("M-RoPE sections", `${show(spec.mrope_section)}${spec.mrope_interleaved ? ", interleaved" : ""}`, "multimodal RoPE", EXPLAINED.mrope);
      if (spec.nope_dim) linked("MLA", `${spec.nope_dim} coordinates per head without RoPE beside the ${spec.rotary_dim} rotated`, "MLA", EXPLAINED.mla);
      if (spec.nope_layers && spec.nope_layers.length) linked("layers without RoPE", show(spec.nope_layers), "NoPE layers", EXPLAINED.nope);
      if (spec.query_scale) linked("query scaling", spec.query_scale.formula, "position-dependent query scaling", EXPLAINED.queryScale);
      if (spec.freq_scales) linked("frequency scales", show(spec.freq_scales), "learned frequency scales", EXPLAINED.freqScales);
      if (spec.compressed_keys) linked("compressed keys", spec.compressed_keys.rule, "sparse attention", EXPLAINED.sparse);
      if (spec.indexer) linked("indexer", `its own RoPE: rotary_dim ${spec.indexer.rotary_dim}, layout ${spec.indexer.layout}`, "sparse attention", EXPLAINED.sparse);
    }

    // The wavelengths of every pair against the original context: the explorer's panel.
    chart(parent, spec) {
      const pairs = spec.pairs || [];
      if (!pairs.length) return;
      const invFreq = pairs.map((p) => p.inv_freq ?? 0);
      let omega;
      try {
        omega = Array.from(PR.invFreq(spec.rotary_dim, spec.base)); // the explorer's checked formula
      } catch (error) {
        omega = invFreq; // a base the formula refuses: draw the reading's frequencies alone
      }
      const scaled = pairs.some((p) => p.ratio !== null && Math.abs(p.ratio - 1) > 1e-12);
      const L0 = spec.original_max_len ?? spec.max_len;
      const lines = [];
      if (L0) lines.push({ value: L0, cls: "pe-context", label: `L\u2080 = ${C.fmt(L0)}`, legend: "original context L\u2080" });
      if (spec.max_len && spec.original_max_len && spec.max_len !== spec.original_max_len) {
        lines.push({ value: spec.max_len, cls: "pe-extended", label: `max_position_embeddings = ${C.fmt(spec.max_len)}`, legend: "max_position_embeddings" });
      }
      const figure = make("figure", { class: "pe-panel pe-palette rc-chart" }, parent);
      const title = make("p", { class: "pe-panel-title" }, figure);
      const titleId = `rc-chart-${Math.random().toString(36).slice(2, 8)}`;
      title.id = titleId;
      const svg = C.el("svg", { role: "img", "aria-labelledby": titleId, class: "pe-svg" }, figure);
      const legend = make("div", { class: "pe-legend" }, figure);
      const readout = make("figcaption", { class: "pe-readout" }, figure);
      const method = spec.scaling ? spec.scaling.method : null;
      const label = scaled ? `${method || "this model's"} frequencies` : "\u03bb\u1d62 = 2\u03c0 base^(2i/d)";
      const { lam } = EX.drawWavelengths({ title, svg, legend }, { invFreq, omega, scaled, label, lines, marker: null });
      const turning = pairs.filter((p) => p.turns !== null && p.turns >= 1).length;
      // A pair of frequency 0 never turns (Gemma 4's proportional RoPE): no point on a log axis.
      const still = invFreq.filter((w) => !(w > 0)).length;
      const last = invFreq.findLastIndex((w) => w > 0);
      readout.textContent =
        `${pairs.length} pairs: \u03bb\u2080 = ${C.fmt(lam[0])}` + (last > 0 ? `, \u03bb${subscript(last)} = ${C.fmt(lam[last])}` : "") + " positions per turn" +
        (still ? `; ${still} pairs have frequency 0 and do not turn (not drawn)` : "") +
        (L0 ? `; ${turning} of ${pairs.length} turn at least once within ${L0} positions.` : ".");
    }

    showAxial(box, params, title, enc = null) {
      const section = make("div", { class: "rc-rope" }, box);
      const head = make("p", { class: "rc-rope-title" }, section, `${title} (`);
      link(head, "axial 2-D RoPE", enc ? KINDS.axial[1] : EXPLAINED.axial);
      head.append(")");
      const facts = this.facts(section, "rc-axial");
      if (enc) {
        facts.row("family (model_type)", String(enc.model_type));
        code(facts.row("decided by"), enc.source);
      }
      for (const [key, value] of Object.entries(params)) {
        if (key === "inv_freq" || key === "pair_axes" || key === "notes") continue;
        facts.row(key, show(value));
      }
      this.notes(section, (enc && enc.notes) || params.notes, "Notes");
    }
  }

  function init() {
    for (const root of document.querySelectorAll(".rc-reader:not(.rc-ready)")) {
      try {
        new Reader(root);
      } catch (error) {
        root.textContent = `The config reader failed to start: ${error.message}`;
        throw error;
      }
    }
  }

  window.posencReadConfig = { init, Reader };
  if (window.document$) window.document$.subscribe(init);
  else if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
