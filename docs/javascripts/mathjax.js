// MathJax 3 configuration for the self-hosted copy in vendor/mathjax/ (scripts/vendor_mathjax.sh).
// Material's documented setup relies on ignoreHtmlClass/processHtmlClass, which also skips the
// <p> children of notebook markdown cells; typesetting the elements explicitly renders both
// arithmatex spans and notebook math.
window.MathJax = {
  tex: {
    inlineMath: [["\\(", "\\)"], ["$", "$"]], // "$" only reaches MathJax inside notebook cells
    displayMath: [["\\[", "\\]"], ["$$", "$$"]],
    processEscapes: true,
    processEnvironments: true,
    tags: "ams", // \label / \eqref numbering
    // Without noundefined, an unknown macro is a visible error (mjx-merror) that the browser test
    // catches, rather than red text that looks rendered.
    packages: { "[-]": ["noundefined"] },
  },
  startup: { typeset: false },
};

// document$ fires on the first load and after every instant navigation.
document$.subscribe(() => {
  // Script missing: leave the TeX visible rather than raise a page error.
  if (!window.MathJax.startup) return;
  MathJax.startup.promise.then(() => {
    // Forget the previous page's equation labels, or \label reuse across pages raises errors.
    MathJax.startup.output.clearCache();
    MathJax.typesetClear();
    MathJax.texReset();
    return MathJax.typesetPromise(
      document.querySelectorAll(".arithmatex, .jp-RenderedMarkdown"),
    );
  });
});
