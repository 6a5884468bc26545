// The scripts that only some pages use, loaded by the pages that use them.
//
// Every page used to load the explorer and its widgets (posenc_ref.js, explorer_charts.js,
// explorer.js), the config reader (read_config.js) and the model zoo's filter (zoo-filter.js):
// about 90 KB of script compiled and run on each of the site's pages, a few of which have one of
// them (benchmarks/page_cost.py measured it). This is the only one of them on every page. Each
// time Material shows a page (document$: the first load, and after every instant navigation),
// it looks for the elements each script starts on and loads what the page needs, in order,
// once: a script already loaded has subscribed to document$ itself and starts the new page's
// elements.
(() => {
  "use strict";

  const here = document.currentScript.src;
  const NEEDS = [
    { selector: ".pe-widget", scripts: ["posenc_ref.js", "explorer_charts.js", "explorer.js"] },
    // the reader draws with the explorer's charts and formulas (window.posencCharts, posencRef,
    // posencExplorer)
    { selector: ".rc-reader", scripts: ["posenc_ref.js", "explorer_charts.js", "explorer.js", "read_config.js"] },
    { selector: "input.zoo-filter", scripts: ["zoo-filter.js"] },
  ];
  const loading = new Map(); // script name -> Promise, settled once it has run

  function load(name) {
    if (!loading.has(name)) {
      loading.set(
        name,
        new Promise((resolve, reject) => {
          const script = document.createElement("script");
          script.src = new URL(name, here).href;
          script.onload = resolve;
          script.onerror = () => reject(new Error(`page_scripts.js: ${script.src} did not load`));
          document.head.appendChild(script);
        }),
      );
    }
    return loading.get(name);
  }

  async function loadInOrder(names) {
    for (const name of names) await load(name); // each uses what the one before defined
  }

  function loadWhatThePageUses() {
    for (const { selector, scripts } of NEEDS) {
      if (document.querySelector(selector)) {
        loadInOrder(scripts).catch((error) => console.error(error));
      }
    }
  }

  // document$ replays the page shown last to a late subscriber; without Material, the page is
  // parsed already (this script is at the end of the body).
  if (window.document$) window.document$.subscribe(loadWhatThePageUses);
  else loadWhatThePageUses();
})();
