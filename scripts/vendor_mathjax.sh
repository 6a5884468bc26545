#!/usr/bin/env bash
# Vendor MathJax 3.2.2 from the npm registry into docs/vendor/mathjax/ (git-ignored).
#
# Why: the site must render math with no network when a page loads, and third-party assets are
# never committed. The tarball is checked against the registry's published sha512 integrity, so
# a tampered or different package fails the build instead of shipping. Idempotent: re-running
# replaces the folder. Needs node/npm (about 1 s, a 6 MB download).
set -euo pipefail

VERSION="3.2.2"
INTEGRITY="sha512-Bt+SSVU8eBG27zChVewOicYs7Xsdt40qm4+UpHyX7k0/O9NliPc+x77k1/FEsPsjKPZGJvtRZM1vO+geW0OhGw=="

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dest="$root/docs/vendor/mathjax"

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
stage="$tmp/mathjax"
mkdir -p "$stage/input/tex" "$stage/output/chtml/fonts"
cp "$es5/tex-mml-chtml.js" "$stage/"
# Autoloaded TeX packages (\cancel, \bbox, braket, ...): one missing file blanks all math on a page.
cp -r "$es5/input/tex/extensions" "$stage/input/tex/"
# CHTML fonts, found relative to the script with no configuration.
cp -r "$es5/output/chtml/fonts/woff-v2" "$stage/output/chtml/fonts/"
# Loaded lazily from MathJax's context menu (accessibility, menu UI). sre/ (speech, 3.9 MB) is left
# out: only a reader who switches on the speech explorer would need it.
cp -r "$es5/a11y" "$es5/ui" "$stage/"
cp "$tmp/package/LICENSE" "$stage/"
echo "$VERSION $INTEGRITY" > "$stage/VERSION"

for f in tex-mml-chtml.js input/tex/extensions/cancel.js output/chtml/fonts/woff-v2/MathJax_Main-Regular.woff LICENSE; do
  [[ -s "$stage/$f" ]] || { echo "vendor_mathjax: $f missing from the package" >&2; exit 1; }
done

mkdir -p "$(dirname "$dest")"
rm -rf "$dest"
mv "$stage" "$dest"
echo "vendor_mathjax: mathjax@$VERSION -> docs/vendor/mathjax ($(du -sh "$dest" | cut -f1))"
