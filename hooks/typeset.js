// Typeset the site's mathematics at build time: MathJax 3 in Node, one process for the whole build.
//
// Started by hooks/typeset.py with the folder of MathJax's components (es5/, fetched from npm
// and hash-checked by scripts/vendor_mathjax.sh). It reads one JSON request a line on stdin and
// answers one JSON line on stdout:
//
//   {"fragments": [html, ...]}  the math-bearing elements of one page, in page order: typeset
//       as one MathJax document, so equation numbers and \eqref (forward ones too) work across
//       the page's formulas, and numbering starts afresh on each page, as it did in the browser.
//       Answer: {"fragments": [html, ...], "errors": [{"tex", "message"}], "labels": {label: n}}
//   {"stylesheet": true}  the CSS for every character and construct typeset so far (CHTML's
//       "adaptive" sheet: one file for the site, ~35 KB instead of 240 KB for the whole font).
//       Answer: {"css": text}
//
// The configuration is the one the browser used (docs/javascripts/mathjax.js before issue 43),
// so the output is what readers saw, built once instead of on every page view.
"use strict";

const readline = require("readline");

const [components, fontURL] = process.argv.slice(2);

global.MathJax = {
  loader: {
    paths: { mathjax: components },
    load: ["adaptors/liteDOM", "input/tex", "output/chtml", "a11y/assistive-mml"],
    require: require,
  },
  tex: {
    inlineMath: [["\\(", "\\)"], ["$", "$"]], // "$" only matters inside notebook cells
    displayMath: [["\\[", "\\]"], ["$$", "$$"]],
    processEscapes: true,
    processEnvironments: true,
    tags: "ams", // \label / \eqref numbering
    // Without noundefined, an unknown macro is an error (reported, and the build fails) rather
    // than red text that looks rendered.
    packages: { "[-]": ["noundefined"] },
  },
  chtml: {
    fontURL,
    // In the browser MathJax scaled each formula to the x-height of the surrounding text, which
    // it measured: 119.5% in Chromium here with Material's system font stack. Node cannot
    // measure, so the ratio is fixed: ex = 0.528 em over the TeX font's x-height of 0.442 em.
    exFactor: 0.528,
  },
  startup: { typeset: false },
};

require(components + "/startup.js");

// The elements named ``kind`` below ``node`` (liteDOM's getElements only searches documents).
function* descendants(adaptor, node, kind) {
  for (const child of adaptor.childNodes(node)) {
    const found = adaptor.kind(child);
    if (found === kind) yield child;
    if (found !== "#text" && found !== "#comment") yield* descendants(adaptor, child, kind);
  }
}

// The TeX of a formula travels with it, as MathML's own annotation inside the assistive MathML
// (what screen readers read): javascripts/copy_tex.js puts it on the clipboard.
function annotate(adaptor, item) {
  const root = item.typesetRoot;
  const [assistive] = descendants(adaptor, root, "mjx-assistive-mml");
  const math = assistive && adaptor.firstChild(assistive);
  if (!math) return;
  const row = adaptor.node("mrow", {}, []);
  for (const child of adaptor.childNodes(math).slice()) adaptor.append(row, child);
  const tex = adaptor.node("annotation", { encoding: "application/x-tex" }, [
    adaptor.text(item.math),
  ]);
  adaptor.append(math, adaptor.node("semantics", {}, [row, tex]));
}

async function typesetPage(adaptor, fragments) {
  const body = fragments.map((html, i) => `<div data-fragment="${i}">${html}</div>`).join("");
  MathJax.texReset(); // numbering and labels start afresh on every page
  const doc = MathJax.startup.getDocument(`<html><head></head><body>${body}</body></html>`);
  MathJax.startup.document = doc;
  const parts = adaptor.childNodes(adaptor.body(doc.document));
  await MathJax.typesetPromise(parts);
  const errors = [];
  for (const item of doc.math) {
    annotate(adaptor, item);
    for (const error of descendants(adaptor, item.typesetRoot, "mjx-merror")) {
      errors.push({ tex: item.math, message: adaptor.getAttribute(error, "data-mjx-error") });
    }
  }
  const labels = {};
  const tags = doc.inputJax[0].parseOptions.tags;
  for (const [name, label] of Object.entries(tags.allLabels)) labels[name] = label.tag;
  return { fragments: parts.map((part) => adaptor.innerHTML(part)), errors, labels };
}

async function main() {
  await MathJax.startup.promise;
  const adaptor = MathJax.startup.adaptor;
  const lines = readline.createInterface({ input: process.stdin, terminal: false });
  for await (const line of lines) {
    const request = JSON.parse(line);
    let answer;
    if (request.stylesheet) {
      const sheet = MathJax.startup.output.styleSheet(MathJax.startup.document);
      answer = { css: adaptor.textContent(sheet) };
    } else {
      answer = await typesetPage(adaptor, request.fragments);
    }
    process.stdout.write(JSON.stringify(answer) + "\n");
  }
}

main().catch((error) => {
  process.stderr.write(String((error && error.stack) || error) + "\n");
  process.exit(1);
});
