#!/usr/bin/env bash
# Fetch MathJax 3.2.2 from the npm registry into .cache/mathjax/3.2.2/ (git-ignored).
#
# Why: the site's mathematics is typeset when the site is built (hooks/typeset.py runs these
# components in one Node process), so that no reader's browser has to; the built pages need only
# MathJax's fonts, which the build copies next to its stylesheet. Third-party code is never
# committed: the tarball is checked against the registry's published sha512 integrity, so a
# tampered or different package fails the build instead of shipping. Idempotent: re-running
# replaces the folder. Needs node/npm (about 1 s, a 6 MB download).
set -euo pipefail

VERSION="3.2.2"
INTEGRITY="sha512-Bt+SSVU8eBG27zChVewOicYs7Xsdt40qm4+UpHyX7k0/O9NliPc+x77k1/FEsPsjKPZGJvtRZM1vO+geW0OhGw=="

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dest="$root/.cache/mathjax/$VERSION"

command -v npm >/dev/null || { echo "vendor_mathjax: npm is required (apt-get install npm)" >&2; exit 1; }

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

(cd "$tmp" && npm pack --silent "mathjax@$VERSION" >/dev/null)
tarball="$tmp/mathjax-$VERSION.tgz"
[[ -f "$tarball" ]] || { echo "vendor_mathjax: npm pack produced no $tarball" >&2; exit 1; }

# npm's integrity string is "sha512-" + base64 of the raw digest.
actual="sha512-$(openssl dgst -sha512 -binary "$tarball" | base64 -w0)"
if [[ "$actual" != "$INTEGRITY" ]]; then
  echo "vendor_mathjax: integrity mismatch for mathjax@$VERSION" >&2
  echo "  expected $INTEGRITY" >&2
  echo "  actual   $actual" >&2
  exit 1
fi

tar -xzf "$tarball" -C "$tmp"
es5="$tmp/package/es5"

# Build the new tree next to the old one and swap, so an interrupted run never leaves half a copy.
# What hooks/typeset.js loads: the loader and core, the lite DOM for Node, the TeX input with its
# autoloaded packages (\cancel, \bbox, ...: one missing file fails every formula of a page), the
# CommonHTML output with its font data and fonts, and the assistive MathML that screen readers
# read. Left out: the combined browser bundles, speech (sre/, 3.9 MB), the context menu.
stage="$tmp/stage/es5"
mkdir -p "$stage/input" "$stage/output"
cp "$es5/startup.js" "$es5/core.js" "$es5/loader.js" "$stage/"
cp -r "$es5/adaptors" "$es5/a11y" "$stage/"
cp -r "$es5/input/tex" "$es5/input/tex.js" "$es5/input/tex-base.js" "$stage/input/"
cp -r "$es5/output/chtml" "$es5/output/chtml.js" "$stage/output/"
cp "$tmp/package/LICENSE" "$tmp/stage/"
echo "$VERSION $INTEGRITY" > "$tmp/stage/VERSION"

for f in es5/startup.js es5/adaptors/liteDOM.js es5/input/tex/extensions/cancel.js \
         es5/output/chtml/fonts/woff-v2/MathJax_Main-Regular.woff LICENSE; do
  [[ -s "$tmp/stage/$f" ]] || { echo "vendor_mathjax: $f missing from the package" >&2; exit 1; }
done

mkdir -p "$(dirname "$dest")"
rm -rf "$dest"
mv "$tmp/stage" "$dest"
# Before issue 43 the browser typeset the math from a copy in docs/vendor/mathjax/: anything
# left there would be copied into the site, unused.
rm -rf "$root/docs/vendor/mathjax"
rmdir "$root/docs/vendor" 2>/dev/null || true
echo "vendor_mathjax: mathjax@$VERSION -> .cache/mathjax/$VERSION ($(du -sh "$dest" | cut -f1))"
