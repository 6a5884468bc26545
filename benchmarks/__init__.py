"""Benchmarks of posenc_ref against the implementations people run.

One module per family (``sinusoidal``, ``accuracy``, ``rope``, ``import_cost``), a shared
harness (``harness``) and one entry point::

    python -m benchmarks.run [--quick] [--out PATH] [--only NAME ...]

which writes ``benchmarks/results.json``; the site's benchmark page is generated from that file.
Timings are medians of interleaved repeats; ratios are measured within one run. The tests run
``--quick`` for the schema only and never assert times.
"""
