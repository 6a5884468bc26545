#!/usr/bin/env bash
# Vendor Pyodide 314.0.7 from the npm registry into docs/vendor/pyodide/ (git-ignored).
#
# Why: the "Read your config" page (docs/read_config.md) runs posenc_ref's own reader in the
# browser, and the site must work with no network and load nothing from a CDN. Pyodide is
# CPython 3.14 compiled to WebAssembly with its standard library; it is the only runtime the page
# needs (the reader is standard library only). The tarball is checked against the registry's
# published sha512 integrity, so a tampered or different package fails the build instead of
# shipping. Idempotent: re-running replaces the folder. Needs node/npm (about 1 s, a 6.5 MB
# download, 13 MB unpacked). The Node test (tests/site/test_read_config_pyodide.py) loads the same copy.
set -euo pipefail

VERSION="314.0.7"
INTEGRITY="sha512-0YvXxEhfEdpLfb/XkM2BFAeMROq0iMUX2bzzH9pOttyMcWkwq+HbE5uyuGD82LN7y2q+SNvi/6V5JEsOlD2R1A=="

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dest="$root/docs/vendor/pyodide"

command -v npm >/dev/null || { echo "vendor_pyodide: npm is required (apt-get install npm)" >&2; exit 1; }

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

(cd "$tmp" && npm pack --silent "pyodide@$VERSION" >/dev/null)
tarball="$tmp/pyodide-$VERSION.tgz"
[[ -f "$tarball" ]] || { echo "vendor_pyodide: npm pack produced no $tarball" >&2; exit 1; }

# npm's integrity string is "sha512-" + base64 of the raw digest.
actual="sha512-$(openssl dgst -sha512 -binary "$tarball" | base64 -w0)"
if [[ "$actual" != "$INTEGRITY" ]]; then
  echo "vendor_pyodide: integrity mismatch for pyodide@$VERSION" >&2
  echo "  expected $INTEGRITY" >&2
  echo "  actual   $actual" >&2
  exit 1
fi

tar -xzf "$tarball" -C "$tmp"
pkg="$tmp/package"

# Build the new tree next to the old one and swap, so an interrupted run never leaves half a copy.
# Only what loadPyodide() fetches: the loader (pyodide.mjs, an ES module: the page's module
# worker and Node both import it), the interpreter (pyodide.asm.mjs + .wasm), the standard
# library, and the lock file it reads at start. Source maps, type declarations and the demo consoles stay out.
# package.json stays: it names the licence (MPL-2.0) and the version.
stage="$tmp/pyodide"
mkdir -p "$stage"
for f in pyodide.mjs pyodide.asm.mjs pyodide.asm.wasm python_stdlib.zip pyodide-lock.json package.json; do
  [[ -s "$pkg/$f" ]] || { echo "vendor_pyodide: $f missing from the package" >&2; exit 1; }
  cp "$pkg/$f" "$stage/"
done
echo "$VERSION $INTEGRITY" > "$stage/VERSION"

mkdir -p "$(dirname "$dest")"
rm -rf "$dest"
mv "$stage" "$dest"
echo "vendor_pyodide: pyodide@$VERSION -> docs/vendor/pyodide ($(du -sh "$dest" | cut -f1))"
