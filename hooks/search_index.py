r"""Make the search index read like the pages: TeX turned into text, explanations ranked first.

Material's search plugin indexes each section's HTML text. Two things go wrong with that here:

- The plugin indexes each page before hooks/typeset.py typesets its math, so the index holds
  the TeX, and the previews of search results showed ``\begin{equation}``, ``\label{eq:...}``
  and ``\omega_i``. After the plugin has written ``search/search_index.json``, this hook
  rewrites the math in every entry as plain text (``\omega_i = n^{-2i/d}`` becomes
  ``ω_i = n^(-2i/d)``), leaving code blocks alone.
- The API reference and the Tests pages repeat every function name (``yarn``, ``longrope``) in
  headings, so for "YaRN" or "LongRoPE" they outranked the page that explains the method. Their
  sections get a lower boost (Material reads ``search.boost`` from a page's metadata), so a
  reader lands on the derivation first and still finds the API entry below it.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

from mkdocs.plugins import event_priority

# Reference pages (the overviews and their module pages, api/ and tests/): found by search,
# ranked below the narrative pages that explain the same names.
LOW_BOOST = {"api": 0.2, "tests": 0.2}

_SYMBOLS = {
    "alpha": "α",
    "beta": "β",
    "gamma": "γ",
    "delta": "δ",
    "Delta": "Δ",
    "epsilon": "ε",
    "varepsilon": "ε",
    "kappa": "κ",
    "lambda": "λ",
    "mu": "μ",
    "nu": "ν",
    "pi": "π",
    "rho": "ρ",
    "sigma": "σ",
    "tau": "τ",
    "theta": "θ",
    "phi": "φ",
    "varphi": "φ",
    "omega": "ω",
    "Omega": "Ω",
    "ell": "ℓ",
    "cdot": "·",
    "times": "×",
    "le": "≤",
    "leq": "≤",
    "ge": "≥",
    "geq": "≥",
    "ne": "≠",
    "neq": "≠",
    "approx": "≈",
    "lesssim": "≲",
    "ldots": "…",
    "dots": "…",
    "cdots": "…",
    "vdots": "⋮",
    "sum": "Σ",
    "prod": "Π",
    "in": "∈",
    "to": "→",
    "pm": "±",
    "infty": "∞",
    "lVert": "‖",
    "rVert": "‖",
    "|": "‖",
    "lvert": "|",
    "rvert": "|",
    "langle": "⟨",
    "rangle": "⟩",
    "lfloor": "⌊",
    "rfloor": "⌋",
    "lceil": "⌈",
    "rceil": "⌉",
    "odot": "⊙",
    "top": "ᵀ",
    "Longleftrightarrow": "⇔",
    "Leftrightarrow": "⇔",
    "Rightarrow": "⇒",
    "square": "∎",
    "partial": "∂",
    "{": "{",
    "}": "}",
    "_": "_",
    "%": "%",
    "&": "&",
    "#": "#",
    "$": "$",
}
# Commands whose argument is kept as it is (the command itself only styles it).
_KEEP_ARGUMENT = {
    "text",
    "mathrm",
    "mathbf",
    "mathit",
    "mathsf",
    "mathtt",
    "textbf",
    "textit",
    "operatorname",
    "mathbb",
    "mathcal",
    "boldsymbol",
    "hat",
    "widehat",
    "bar",
    "overline",
    "tilde",
    "vec",
    "underbrace",
    "overbrace",
    "bbox",
}
_DROP_WITH_ARGUMENT = {"label", "tag", "begin", "end", "hspace", "vspace"}
_SPACES = {",", ";", ":", "!", " ", "quad", "qquad", "\n"}
_SIZES = {
    "left",
    "right",
    "big",
    "bigl",
    "bigr",
    "Big",
    "Bigl",
    "Bigr",
    "bigg",
    "biggl",
    "biggr",
    "Bigg",
    "Biggl",
    "Biggr",
    "displaystyle",
    "textstyle",
    "nonumber",
    "notag",
    "limits",
}


def _group(tex: str, start: int) -> tuple[str, int]:
    """The brace group (or single token) at ``start``, and the index after it."""
    while start < len(tex) and tex[start] == " ":
        start += 1
    if start >= len(tex):
        return "", start
    if tex[start] != "{":
        if tex[start] == "\\":
            match = re.match(r"\\([A-Za-z]+|.)", tex[start:])
            return match.group(0), start + match.end()
        return tex[start], start + 1
    depth = 0
    for end in range(start, len(tex)):
        depth += {"{": 1, "}": -1}.get(tex[end], 0)
        if depth == 0:
            return tex[start + 1 : end], end + 1
    return tex[start + 1 :], len(tex)


def _operand(text: str) -> str:
    # x^2i/d reads as (x^2i)/d: bracket anything longer than one name or number.
    return text if re.fullmatch(r"[\w.'*ωλπβμνσγκρτθφℓα]*", text) else f"({text})"


def tex_to_text(tex: str) -> str:
    r"""Plain-text rendering of a TeX formula, for search previews (``\frac{a}{b}`` -> ``a/b``)."""
    out, i = [], 0
    while i < len(tex):
        char = tex[i]
        if char == "\\":
            match = re.match(r"\\([A-Za-z]+|.|\n)", tex[i:])
            name, i = match.group(1), i + match.end()
            if name == "\\":
                out.append("; ")
            elif name in _SPACES:
                out.append(" ")
            elif name in _SIZES:
                pass
            elif name in _DROP_WITH_ARGUMENT:
                _, i = _group(tex, i)
            elif name in {"eqref", "ref"}:  # the number MathJax shows is not known here
                _, i = _group(tex, i)
                out.append("(eq.)")
            elif name in {"frac", "dfrac", "tfrac"}:
                top, i = _group(tex, i)
                bottom, i = _group(tex, i)
                out.append(f"{_operand(tex_to_text(top))}/{_operand(tex_to_text(bottom))}")
            elif name == "sqrt":
                argument, i = _group(tex, i)
                out.append(f"√({tex_to_text(argument)})")
            elif name in _KEEP_ARGUMENT:
                argument, i = _group(tex, i)
                out.append(tex_to_text(argument))
            elif name in _SYMBOLS:
                out.append(_SYMBOLS[name])
            else:  # \sin, \ln, \max, \exp and anything unknown: the name reads fine
                out.append(name + " ")
        elif char in "{}":
            i += 1
        elif char == "&":
            out.append(" ")
            i += 1
        elif char in "_^":
            argument, i = _group(tex, i + 1)
            out.append(char + _operand(tex_to_text(argument)))
        else:
            out.append(char)
            i += 1
    return re.sub(r"\s+", " ", "".join(out)).strip()


# Math as the search plugin sees it: arithmatex's \( \) and \[ \] delimiters; notebook cells
# keep $...$ and $$...$$. Code (<pre>, <code>) is left as it is: it may contain any of these.
_CODE = re.compile(r"<(pre|code)>.*?</\1>", re.S)
_MATH = re.compile(r"\\\((.+?)\\\)|\\\[(.+?)\\\]", re.S)
_NOTEBOOK_MATH = re.compile(
    r"\\\((.+?)\\\)|\\\[(.+?)\\\]|\$\$(.+?)\$\$|(?<![\\$\w])\$([^$\n]+?)\$", re.S
)


def clean_text(text: str, dollars: bool = False) -> str:
    """``text`` with every formula outside code replaced by :func:`tex_to_text`.

    ``dollars``: also ``$...$`` and ``$$...$$`` (notebook cells); elsewhere a dollar is text.
    """
    math = _NOTEBOOK_MATH if dollars else _MATH
    parts, last = [], 0
    for code in _CODE.finditer(text):
        parts.append(math.sub(_replace, text[last : code.start()]))
        parts.append(code.group(0))
        last = code.end()
    parts.append(math.sub(_replace, text[last:]))
    return "".join(parts)


def _replace(match: re.Match) -> str:
    formula = next(group for group in match.groups() if group is not None)
    # The index holds HTML: &lt; and &amp; in a formula are < and & (alignment) to TeX.
    return html.escape(tex_to_text(html.unescape(formula)), quote=False)


def on_page_markdown(markdown, page, config, files):
    boost = LOW_BOOST.get(page.file.src_uri.removesuffix(".md").split("/")[0])
    if boost is not None:
        search = page.meta.setdefault("search", {})
        search.setdefault("boost", boost)
    return markdown


@event_priority(-100)  # after the search plugin has written its index
def on_post_build(config):
    path = Path(config.site_dir) / "search" / "search_index.json"
    if not path.is_file():
        return
    index = json.loads(path.read_text(encoding="utf-8"))
    for entry in index["docs"]:
        notebook = entry["location"].startswith("notebooks/")
        entry["title"] = clean_text(entry["title"], dollars=notebook)
        entry["text"] = clean_text(entry["text"], dollars=notebook)
    path.write_text(json.dumps(index, separators=(",", ":"), ensure_ascii=False), "utf-8")
