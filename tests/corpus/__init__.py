"""The released configs of ``../shared/real_configs/``, each against its family's own code.

``python -m tests.corpus --report`` prints the committed status table; ``--write`` reruns every
file and rewrites ``tests/data/real_configs_status.json``; ``--file NAME ...`` reruns some files
and prints their rows. ``tests/test_real_configs.py`` runs the same check per file.

For each file (``check.check_file``):

1. transformers builds its config object from the dict, as ``from_pretrained`` does
   (``config_class.from_dict``), choosing the class by ``model_type``, else by the
   ``model_type`` of its ``text_config``, else by a transformers class named in
   ``architectures`` (``build.resolve``). A file none of these names is remote code that
   transformers cannot build.
2. The text model is built from that config with tiny sizes and random weights, every RoPE
   value as released (``build.tiny``: the sweep's ``harness.tiny_config`` over the released
   config instead of the family's default), and run at positions inside the original context,
   at its edge and up to four times past it (``tests/hf_sweep/runs.py``), recording q and k
   before and after the family's own RoPE and query scaling.
3. ``RotaryEmbedding.from_hf_config`` reads the released dict, and separately the transformers
   config object built from it (not the tiny one), and rotates the recorded states of every
   layer, by that layer's type; the difference must stay within the sweep's float32-angle
   bound (``tests/hf_sweep/compare.py``).
4. ``python -m posenc_ref inspect FILE`` must exit 0 and name every layer type.
"""
