"""The sweep: every transformers family with a rotary class, proven from its own code.

``python -m tests.hf_sweep --report`` prints the committed results; ``--write`` reruns the sweep
and rewrites ``tests/data/hf_sweep_truth.json`` (what each family's code does, read from its
states) and ``tests/data/hf_sweep_results.json`` (posenc_ref's agreement, the site's table).
"""
