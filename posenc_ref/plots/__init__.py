"""Figure functions for the site and the notebooks, one module per page family.

Every figure on the site is drawn by a function here, at build time. A function decorated with
:func:`site_figure` is rendered by the site's figure hook to ``figures/<name>.svg``; the one
decorated with :func:`figure_facts` right after it computes the numbers the figure's alt text
states. The figure functions take parameters so that the notebooks can redraw them for another
base or width.

The modules follow the pages:

- ``plots.absolute``: the sinusoidal table, its frequencies and columns (``absolute.md``, home).
- ``plots.properties``: distances, dot products, uniqueness, wavelengths (``properties.md``).
- ``plots.relative``: T5 buckets, Shaw clipping, ALiBi biases (``relative.md``).
- ``plots.rope``: the rotation of a pair, the long-term decay (``rope.md``).
- ``plots.rope_design``: heads built from fast and slow pairs (``rope_design.md``).
- ``plots.rope_scaling``: wavelengths under each context-extension method (``rope_scaling.md``).
- ``plots.rope_extension``: a fitted score extrapolated and interpolated, the distances Self-Extend
  and ReRoPE feed the rotation (``rope_extension.md``).
- ``plots.extension_laws``: PI's bound, NTK-aware's usable extension, Liu et al.'s limit,
  Resonance RoPE's gaps (``extension_laws.md``).
- ``plots.precision``: float32 against float64 angles (``precision.md``).
- ``plots.check``: a RoPE's error per position, a model's wavelengths (``check.md``, and
  ``python -m posenc_ref inspect --plot``).
- ``plots.models``: per-pair wavelengths of released models (``models.md``).
- ``plots.axial``: one pair's angle over a patch grid (``axial.md``).
- ``plots.beyond_rope``: NoPE's signal, p-RoPE, xPos, FoPE, RoPE-Mixed (``beyond_rope.md``).
- ``plots.relative_terms``: Transformer-XL, DeBERTa, KERPLE, FIRE, CoPE (``relative.md``).

Every function is also importable from here (``from posenc_ref.plots import heatmap``). The
visual tour (``tour.md``) reuses the figures of the first two. The benchmark figures are not
part of the package: they live beside the benchmarks, in ``benchmarks/figures.py``.

``import posenc_ref`` does not import this package, and this package does not import
matplotlib (nor scikit-learn) until a figure is drawn: each function imports what it needs.
"""

from ._registry import (
    FIGURE_FACTS,
    SITE_FIGURES,
    default_of,
    figure_facts,
    render_svg,
    sci,
    site_figure,
)
from .absolute import (
    frequency_curve,
    heatmap,
    heatmap_10x4_base100,
    heatmap_128x8,
    heatmap_1000x512,
    inv_freq_512,
    pipeline,
    pipeline_diagram,
    waves,
    waves_default,
)
from .axial import axial_pair_angles
from .beyond_rope import (
    fope_default,
    fope_series,
    nope_signal,
    nope_signal_default,
    p_rope_default,
    p_rope_frequencies,
    rope_mixed_default,
    rope_mixed_scores,
    xpos_decay,
    xpos_decay_default,
)
from .check import (
    check_allowance,
    compare_angles,
    error_positions,
    hf_rope_error,
    hf_rope_error_fns,
    llama31_compare,
    llama31_wavelengths,
    rope_error_curves,
    rope_error_plot,
    spec_wavelengths,
)
from .extension_laws import (
    extrapolation_limits,
    ntk_usable,
    pi_bounds,
    pi_bounds_data,
    resonance_gaps,
)
from .models import (
    zoo_wavelengths,
)
from .precision import (
    angle_precision,
    angle_precision_data,
    float32_angle_errors,
    hf_float32_inv_freq,
)
from .properties import (
    binary_vs_sinusoidal,
    binary_vs_sinusoidal_default,
    distance_matrix,
    distance_matrix_default,
    dot_product_offset_default,
    dot_product_vs_offset,
    min_distance,
    min_distance_default,
    neighbour_distance,
    neighbour_distance_default,
    projection,
    projection_d8,
    wavelength_curve,
    wavelengths_512,
)
from .relative import (
    alibi_bias_default,
    alibi_heads,
    t5_buckets,
    t5_buckets_default,
)
from .relative_terms import (
    cope_counts,
    cope_default,
    deberta_default,
    deberta_positions,
    fire_default,
    fire_interpolation,
    kerple_default,
    kerple_kernels,
    transformer_xl_default,
    transformer_xl_terms,
)
from .rope import (
    rope_decay,
    rope_decay_bound,
    rope_rotation,
)
from .rope_design import (
    built_heads,
    semantic_head,
    slow_pairs,
)
from .rope_extension import (
    extension_positions,
    pi_fit,
    pi_fit_data,
    sink_positions,
)
from .rope_scaling import (
    context_extension,
)

__all__ = [
    "SITE_FIGURES",
    "site_figure",
    "FIGURE_FACTS",
    "figure_facts",
    "default_of",
    "sci",
    "render_svg",
    "heatmap",
    "heatmap_128x8",
    "heatmap_10x4_base100",
    "heatmap_1000x512",
    "pipeline_diagram",
    "pipeline",
    "frequency_curve",
    "inv_freq_512",
    "waves",
    "waves_default",
    "binary_vs_sinusoidal",
    "binary_vs_sinusoidal_default",
    "distance_matrix",
    "distance_matrix_default",
    "dot_product_vs_offset",
    "dot_product_offset_default",
    "neighbour_distance",
    "neighbour_distance_default",
    "min_distance",
    "min_distance_default",
    "projection",
    "projection_d8",
    "wavelength_curve",
    "wavelengths_512",
    "t5_buckets",
    "t5_buckets_default",
    "alibi_heads",
    "alibi_bias_default",
    "rope_rotation",
    "rope_decay_bound",
    "rope_decay",
    "semantic_head",
    "built_heads",
    "slow_pairs",
    "context_extension",
    "pi_fit_data",
    "pi_fit",
    "extension_positions",
    "sink_positions",
    "pi_bounds_data",
    "pi_bounds",
    "ntk_usable",
    "extrapolation_limits",
    "resonance_gaps",
    "hf_float32_inv_freq",
    "float32_angle_errors",
    "angle_precision_data",
    "angle_precision",
    "check_allowance",
    "error_positions",
    "rope_error_curves",
    "rope_error_plot",
    "hf_rope_error_fns",
    "hf_rope_error",
    "spec_wavelengths",
    "llama31_wavelengths",
    "compare_angles",
    "llama31_compare",
    "zoo_wavelengths",
    "axial_pair_angles",
    "nope_signal",
    "nope_signal_default",
    "p_rope_frequencies",
    "p_rope_default",
    "xpos_decay",
    "xpos_decay_default",
    "fope_series",
    "fope_default",
    "rope_mixed_scores",
    "rope_mixed_default",
    "transformer_xl_terms",
    "transformer_xl_default",
    "deberta_positions",
    "deberta_default",
    "kerple_kernels",
    "kerple_default",
    "fire_interpolation",
    "fire_default",
    "cope_counts",
    "cope_default",
]
