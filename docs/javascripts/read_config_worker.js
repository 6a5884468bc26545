// posenc_ref's reader under Pyodide: the worker of the "Read your config" page, and the same code
// for Node (tests/site/test_read_config_pyodide.py runs the whole corpus through it).
//
// The page (read_config.js) starts this file as a Web Worker, so that loading Python and reading
// a large file never freeze the page, and so that a reader that fails beyond repair (Pyodide's
// fatal errors) can be dropped and started afresh. Everything the worker does is in `start` and
// `read` below, which Node calls directly: the browser and the Node test run the same JavaScript
// and the same Python, and differ only in how the files arrive (fetch here, the disk there).
//
// What runs is the package's own command line: `posenc_ref.__main__.main(["inspect", "--json",
// NAME])` and `main(["inspect", NAME])` on the file written into Pyodide's file system, so the
// page shows what `posenc-ref inspect` prints, refusals included, word for word.
(function (root) {
  "use strict";

  // Folders in Pyodide's own file system, under its working directory at start (its home).
  const READER = "reader"; // the package zip is unpacked here (on sys.path)
  const WORK = "read"; // the config being read is written here, then removed

  // The Python side, run once after the package is unpacked. It defines `posenc_read(name,
  // flags)`, which returns one JSON string: {"json": run, "text": run}, each run
  // {"status", "stdout", "stderr"} as the command line gives them.
  const RUNNER = String.raw`
import contextlib
import io
import json
import os
import sys

sys.path.insert(0, os.path.abspath(${JSON.stringify(READER)}))
WORK = os.path.abspath(${JSON.stringify(WORK)})
import posenc_ref.__main__ as cli

# JSON nested thousands deep would overflow Pyodide's C stack inside json.loads (a fatal error
# that ends the interpreter, where CPython raises RecursionError): the command line counts the
# levels on the text first and refuses past 64, so the same refusal comes out everywhere.


def _run(argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = cli.main(argv)
        except SystemExit as stop:  # argparse's usage errors exit, as on a terminal
            status = stop.code if isinstance(stop.code, int) else 2
    return {"status": status, "stdout": out.getvalue(), "stderr": err.getvalue()}


def posenc_read(name, flags):
    os.chdir(WORK)
    try:
        result = {"json": _run(["inspect", "--json", *flags, name])}
        if result["json"]["status"] == 0:
            result["text"] = _run(["inspect", *flags, name])
    finally:
        os.remove(name)
    return json.dumps(result)
`;

  // A file name the command line can be given as it is (it names the file in --json's "input"):
  // no folder, no leading dash (argparse would take it for a flag); else "config.json".
  function safeName(name) {
    const base = String(name || "").split(/[\\/]/).pop();
    return /^[A-Za-z0-9_][A-Za-z0-9_.+=@()-]{0,200}$/.test(base) ? base : "config.json";
  }

  // Start Python and the reader: `loadPyodide` from pyodide.mjs, `indexURL` the folder holding
  // it, `readerZip` the bytes of data/posenc_ref_reader.zip. `stage(name)` is told each step.
  async function start(loadPyodide, indexURL, readerZip, stage = () => {}) {
    stage("python");
    const pyodide = await loadPyodide({ indexURL, stdout: () => {}, stderr: () => {} });
    stage("reader");
    const home = pyodide.FS.cwd();
    const work = `${home}/${WORK}`;
    pyodide.FS.mkdirTree(`${home}/${READER}`);
    pyodide.FS.mkdirTree(work);
    // A plain Uint8Array: Pyodide refuses subclasses such as Node's Buffer.
    pyodide.unpackArchive(Uint8Array.from(readerZip), "zip", { extractDir: `${home}/${READER}` });
    pyodide.runPython(RUNNER); // before any chdir: its folders are found from the home
    return {
      pyodide,
      work,
      posenc: pyodide.runPython("from posenc_ref import __version__; __version__"),
      python: pyodide.runPython("import sys; sys.version.split()[0]"),
      maxBytes: pyodide.runPython("cli.MAX_BYTES"), // the command line reads no more than this
    };
  }

  // Read one config: its bytes as the file `name`, with the command line's extra `flags`
  // (["--layout", "half"]). Returns {name, json: run, text?: run}.
  function read(runtime, name, bytes, flags = []) {
    const file = safeName(name);
    runtime.pyodide.FS.writeFile(`${runtime.work}/${file}`, bytes instanceof Uint8Array ? bytes : new Uint8Array(bytes));
    const posencRead = runtime.pyodide.globals.get("posenc_read");
    const pyFlags = runtime.pyodide.toPy(flags);
    try {
      return { name: file, ...JSON.parse(posencRead(file, pyFlags)) };
    } finally {
      pyFlags.destroy();
      posencRead.destroy();
    }
  }

  const api = { RUNNER, safeName, start, read };

  if (typeof module === "object" && module.exports) {
    module.exports = api; // Node
    return;
  }
  root.posencReaderCore = api;
  if (typeof WorkerGlobalScope === "undefined" || !(root instanceof WorkerGlobalScope)) return;

  // ------------------------------------------------------------------ the Web Worker
  // A module worker (`new Worker(url, {type: "module"})`): Pyodide refuses classic ones.
  let runtime = null;
  root.onmessage = async (event) => {
    const message = event.data;
    const reply = (data) => root.postMessage({ id: message.id, ...data });
    try {
      if (message.type === "start") {
        const { loadPyodide } = await import(`${message.pyodide}pyodide.mjs`);
        const response = await fetch(message.reader);
        if (!response.ok) throw new Error(`${message.reader}: HTTP ${response.status}`);
        const zip = new Uint8Array(await response.arrayBuffer());
        runtime = await start(loadPyodide, message.pyodide, zip, (name) => reply({ type: "stage", stage: name }));
        reply({ type: "ready", posenc: runtime.posenc, python: runtime.python, maxBytes: runtime.maxBytes });
      } else if (message.type === "read") {
        reply({ type: "result", result: read(runtime, message.name, message.bytes, message.flags) });
      }
    } catch (error) {
      // A fatal Pyodide error leaves an interpreter that refuses every call: say so, so the page
      // starts a new worker for the next file.
      const fatal = Boolean(error && (error.pyodide_fatal_error || /fatally failed/.test(String(error))));
      reply({ type: "failed", fatal, message: String(error && error.message ? error.message : error) });
    }
  };
})(typeof self !== "undefined" ? self : this);
