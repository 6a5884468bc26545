"""Strip the script blocks nbconvert puts on every notebook page.

mkdocs-jupyter's template emits a MathJax 2 loader and a ``text/x-mathjax-config`` block.
Material's instant navigation re-creates inline scripts without their ``type``, so that block
then runs as JavaScript and throws (``reading 'Config'``) next to our MathJax 3. The site's own
``javascripts/mathjax.js`` typesets notebook markdown instead. The mermaid loader points at
cdnjs; our notebooks have no mermaid cells, and the site loads nothing from other hosts.
"""

from __future__ import annotations

import re

_MATHJAX2_LOADER = re.compile(r'<!-- Load mathjax -->\s*<script src="[^"]*">\s*</script>', re.S)
_MATHJAX2_CONFIG = re.compile(
    r'<script type="text/x-mathjax-config">.*?</script>\s*(<!-- End of mathjax configuration -->)?',
    re.S,
)
_MERMAID_LOADER = re.compile(
    r'<script type="module">\s*document\.addEventListener\("DOMContentLoaded", async \(\) => \{'
    r"\s*const diagrams = document\.querySelectorAll\(\"\.jp-Mermaid.*?</script>",
    re.S,
)


def on_page_content(html, page, config, files):
    if page.file.src_uri.endswith((".ipynb", ".py")):
        html = _MATHJAX2_LOADER.sub("", html)
        html = _MATHJAX2_CONFIG.sub("", html)
        html = _MERMAID_LOADER.sub("", html)
    return html
