// Read config files with posenc_ref under Pyodide in Node, through the "Read your config" page's
// own worker code (docs/javascripts/read_config_worker.js): one Python for every file.
//
//   node tests/site/pyodide_reader.js PYODIDE_DIR READER_ZIP CASES_JSON OUT_JSON
//
// CASES_JSON: [{"path": ..., "flags": [...]}]; each file is read under its own base name, as the
// page reads a chosen file. OUT_JSON gets {"started": {posenc, python, seconds}, "results":
// [{path, name, json: {status, stdout, stderr}, text?: {...}} | {path, failed}]}.
// Used by tests/site/test_read_config_pyodide.py.
"use strict";

const fs = require("node:fs");
const path = require("node:path");
const { pathToFileURL } = require("node:url");
const core = require("../../docs/javascripts/read_config_worker.js");

async function main() {
  const [pyodideDir, readerZip, casesJson, outJson] = process.argv.slice(2);
  const indexURL = path.resolve(pyodideDir) + path.sep;
  const { loadPyodide } = await import(pathToFileURL(path.join(indexURL, "pyodide.mjs")).href);
  const began = process.hrtime.bigint();
  const runtime = await core.start(loadPyodide, indexURL, fs.readFileSync(readerZip));
  const started = {
    posenc: runtime.posenc,
    python: runtime.python,
    seconds: Number(process.hrtime.bigint() - began) / 1e9,
  };
  const results = [];
  for (const { path: file, flags } of JSON.parse(fs.readFileSync(casesJson, "utf8"))) {
    try {
      const result = core.read(runtime, path.basename(file), fs.readFileSync(file), flags || []);
      results.push({ path: file, ...result });
    } catch (error) {
      // One file that breaks Python must not hide the others' answers: say which, and stop.
      results.push({ path: file, failed: String(error && error.stack ? error.stack : error) });
      break;
    }
  }
  fs.writeFileSync(outJson, JSON.stringify({ started, results }));
}

main().catch((error) => {
  process.stderr.write(`${error && error.stack ? error.stack : error}\n`);
  process.exit(1);
});
