// Copying a selection that holds formulas puts their TeX on the clipboard: $...$ inline, $$...$$
// on their own line, the rest of the selection as text.
//
// The formulas are typeset when the site is built (hooks/typeset.py). Their glyphs are drawn by
// CSS and carry no text, so a plain copy would drop them; each formula keeps its TeX as a MathML
// annotation (application/x-tex), which this reads. A selection that starts or ends inside a
// formula takes the whole formula. One listener on the document: it survives Material's instant
// navigation.
(() => {
  const BLOCKS = new Set(["P", "DIV", "LI", "TR", "PRE", "BLOCKQUOTE", "H1", "H2", "H3", "H4",
    "H5", "H6", "TABLE", "UL", "OL", "DL", "DT", "DD", "FIGURE", "FIGCAPTION", "DETAILS"]);

  function texOf(container) {
    const note = container.querySelector('annotation[encoding="application/x-tex"]');
    if (!note) return null;
    const tex = note.textContent.trim();
    return container.getAttribute("display") === "true" ? `\n$$\n${tex}\n$$\n` : `$${tex}$`;
  }

  function formulaAround(node) {
    const element = node.nodeType === Node.ELEMENT_NODE ? node : node.parentElement;
    return element && element.closest("mjx-container");
  }

  // The selection's text, each formula as its TeX, a line break after each block.
  function plain(node) {
    let text = "";
    for (const child of node.childNodes) {
      if (child.nodeType === Node.TEXT_NODE) text += child.data;
      else if (child.nodeName === "BR") text += "\n";
      else if (child.nodeType === Node.ELEMENT_NODE) {
        text += plain(child);
        if (BLOCKS.has(child.nodeName)) text += "\n";
      }
    }
    return text;
  }

  document.addEventListener("copy", (event) => {
    const selection = window.getSelection();
    if (!selection || selection.isCollapsed || !selection.rangeCount) return;
    const fragment = document.createDocumentFragment();
    for (let i = 0; i < selection.rangeCount; i++) {
      const range = selection.getRangeAt(i).cloneRange();
      const start = formulaAround(range.startContainer);
      const end = formulaAround(range.endContainer);
      if (start) range.setStartBefore(start);
      if (end) range.setEndAfter(end);
      fragment.appendChild(range.cloneContents());
    }
    const formulas = [...fragment.querySelectorAll("mjx-container")];
    if (!formulas.length) return; // no formula: the browser's own copy
    for (const formula of formulas) {
      const tex = texOf(formula);
      if (tex !== null) formula.replaceWith(document.createTextNode(tex));
    }
    const html = document.createElement("div");
    html.appendChild(fragment.cloneNode(true));
    event.clipboardData.setData("text/plain", plain(fragment).replace(/\n{3,}/g, "\n\n").trim());
    event.clipboardData.setData("text/html", html.innerHTML);
    event.preventDefault();
  });
})();
