# Two commands do everything on a fresh machine:
#   make serve   set up, build and serve the site on http://127.0.0.1:8000
#   make test    set up, lint, and run the whole test suite (site build and browser test included)
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
# MathJax's components for the build's typesetting (hooks/typeset.py), fetched from npm.
MATHJAX := .cache/mathjax/3.2.2/es5/startup.js
export NO_MKDOCS_2_WARNING := 1

.PHONY: serve build test lint ggml sitetest bench clean

serve: $(STAMP) $(MATHJAX)
	SITE_URL=http://127.0.0.1:8000/ $(BIN)/mkdocs serve --dev-addr 127.0.0.1:8000

build: $(STAMP) $(MATHJAX)
	$(BIN)/mkdocs build --strict

test: $(STAMP) $(MATHJAX) ggml lint sitetest
	$(BIN)/python -m pytest -n auto

# actionlint checks every workflow in .github/workflows/ (and their run: scripts with shellcheck
# when it is installed), so a broken workflow fails here before it fails on GitHub.
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check posenc_ref tests hooks benchmarks scripts experiments
	$(BIN)/actionlint

# ggml's RoPE kernel for tests/test_testing_ggml.py, built once into .cache/ (tests/ggml_rope.py)
ggml: $(STAMP)
	$(BIN)/python -m tests.ggml_rope

# The site, built once before pytest into .cache/site-test/ (tests/site/shared_build.py), like
# ggml: the site tests read that build while it is current, and build one themselves when not.
sitetest: $(STAMP) $(MATHJAX)
	$(BIN)/python -m tests.site.shared_build

bench: $(STAMP)
	$(BIN)/python -m benchmarks.run
	$(BIN)/python -m benchmarks.cli

$(STAMP): pyproject.toml constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -c constraints.txt -e ".[docs,test,peers,frameworks]"
	$(BIN)/python -m pip install --quiet -c constraints.txt --no-deps keras-hub mlx-vlm  # see pyproject
	touch $(STAMP)

$(MATHJAX): scripts/vendor_mathjax.sh
	bash scripts/vendor_mathjax.sh

# Pyodide for the "Read your config" page and its Node test, fetched like MathJax (git-ignored).
PYODIDE := docs/vendor/pyodide/VERSION
serve build test sitetest: $(PYODIDE)
$(PYODIDE): scripts/vendor_pyodide.sh
	bash scripts/vendor_pyodide.sh

clean:
	rm -rf $(VENV) site docs/vendor .cache/mathjax .hypothesis .pytest_cache test-artifacts
