"""Run a family's own text model, tiny and random, and record what it hands to attention.

The record is taken where the family's code calls its attention function: a function registered
with transformers' ``AttentionInterface`` (the model's ``attn_implementation`` is set to it)
stores the query, key and value states exactly as the family passes them, after its
``apply_rotary_pos_emb``, its split into rotary and pass-through parts, its norms and any query
scaling, and returns zeros. Since attention then contributes nothing, every layer's input is the
same whatever the rotary tables are, and a second run gives the states *before* RoPE: its rotary
modules return the identity (cos 1, sin 0; the complex 1 for Llama 4) and every position is 0 (so
a position-dependent query scaling is 1, as it is at position 0). The value states, untouched by
RoPE, must be equal in both runs: a check that the two runs saw the same layer inputs.

Two families do not call an attention function: Falcon calls
``torch.nn.functional.scaled_dot_product_attention`` itself, GPT-NeoX-Japanese its own ``_attn``
method; both are recorded there instead (``Recorder.patch_sdpa``, ``Recorder.patch_method``).
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import importlib
import re
import warnings
from dataclasses import dataclass
from typing import Any

import torch

CAPTURE = "posenc_ref_sweep_capture"
CROSS = re.compile(r"cross|encoder_attn")


@dataclass
class Call:
    """One attention call: states ``(batch, heads, seq, head_dim)`` as float64 copies."""

    module: str
    layer: int | None
    q: torch.Tensor
    k: torch.Tensor
    v: torch.Tensor
    scaling: float | None
    # what truth.analyse read from this call against its states before RoPE (sweep.analysed)
    analysis: Any = dataclasses.field(default=None, repr=False, compare=False)


class Recorder:
    """Collects the attention calls of one forward pass (the registered function writes here).

    ``names`` maps attention modules to their names in the model (``layers.3.self_attn``): the
    layer index where the module does not carry one, and cross-attention (``encoder_attn``,
    ``cross_attn``: keys from another sequence, no RoPE) left out.
    """

    current: Recorder | None = None

    def __init__(self, model: torch.nn.Module | None = None) -> None:
        self.calls: list[Call] = []
        self.names = {id(m): n for n, m in model.named_modules()} if model is not None else {}

    def record(self, module, query, key, value, scaling) -> None:
        name = self.names.get(id(module), "")
        if CROSS.search(name):
            return
        layer = getattr(module, "layer_idx", None)
        if layer is None:
            found = re.search(r"(?:^|\.)(?:layers|layer|h|blocks|block)\.(\d+)\.", name)
            layer = int(found.group(1)) if found else None
        self.calls.append(
            Call(
                type(module).__name__ if module is not None else "",
                layer,
                # one copy each (to() then clone() copied float32 states twice)
                query.detach().to(torch.float64, copy=True),
                key.detach().to(torch.float64, copy=True),
                value.detach().to(torch.float64, copy=True),
                None if scaling is None else float(scaling),
            )
        )

    def __enter__(self) -> Recorder:
        Recorder.current = self
        return self

    def __exit__(self, *exc) -> None:
        Recorder.current = None


def _capture(module, query, key, value, attention_mask, *args, scaling=None, **kwargs):
    """The attention function the sweep registers: record, then contribute nothing."""
    Recorder.current.record(module, query, key, value, scaling)
    batch, heads, seq = query.shape[:3]
    return query.new_zeros(batch, seq, heads, value.shape[-1]), None


def register() -> None:
    """Register the capture, with sdpa's boolean masks (some families index the mask)."""
    from transformers import AttentionInterface
    from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS, sdpa_mask

    AttentionInterface.register(CAPTURE, _capture)
    ALL_MASK_ATTENTION_FUNCTIONS.register(CAPTURE, sdpa_mask)


@contextlib.contextmanager
def patched_sdpa():
    """Record ``torch.nn.functional.scaled_dot_product_attention`` calls (Falcon)."""
    original = torch.nn.functional.scaled_dot_product_attention

    def sdpa(query, key, value, *args, scale=None, **kwargs):
        Recorder.current.record(None, query, key, value, scale)
        return query.new_zeros(*query.shape[:-1], value.shape[-1])

    torch.nn.functional.scaled_dot_product_attention = sdpa
    try:
        yield
    finally:
        torch.nn.functional.scaled_dot_product_attention = original


def patch_attn_method(model: torch.nn.Module, class_suffix: str = "Attention") -> None:
    """Record through each attention module's own ``_attn(query, key, value, mask)``."""

    def make(module):
        def _attn(query, key, value, attention_mask=None, *args, **kwargs):
            Recorder.current.record(module, query, key, value, None)
            out = query.new_zeros(*query.shape[:-1], value.shape[-1])
            return out, None

        return _attn

    for module in model.modules():
        if type(module).__name__.endswith(class_suffix) and hasattr(module, "_attn"):
            module._attn = make(module)


# --------------------------------------------------------------------------- identity tables


def _identity_like(out: Any) -> Any:
    """The rotary module's output with the rotation removed: cos 1, sin 0, complex 1."""
    if isinstance(out, torch.Tensor):
        if out.is_complex():
            return torch.ones_like(out)
        raise TypeError(f"a real tensor alone is not a (cos, sin) pair: {tuple(out.shape)}")
    if isinstance(out, (tuple, list)) and len(out) == 2:
        cos, sin = out
        return type(out)((torch.ones_like(cos), torch.zeros_like(sin)))
    raise TypeError(f"unexpected rotary output {type(out).__name__}")


# Module-level functions that move coordinates even at angle 0: they read interleaved pairs and
# write them in half order (DeepSeek-V3's ``rope_interleave``). With identity tables they would
# still permute, so in the identity run they return q and k as they are.
PERMUTING = ("apply_rotary_pos_emb_interleave",)


@contextlib.contextmanager
def identity_rotary(model: torch.nn.Module, family: str | None = None):
    """Every ``*RotaryEmbedding`` module of the model returns the identity rotation."""
    patched = []
    saved = {}
    mod = modeling(family) if family else None
    for name in PERMUTING:
        if mod is not None and hasattr(mod, name):
            saved[name] = getattr(mod, name)
            setattr(mod, name, lambda q, k, *args, **kwargs: (q, k))
    for module in model.modules():
        if type(module).__name__.endswith("RotaryEmbedding"):
            original = module.forward

            def forward(*args, _original=original, **kwargs):
                return _identity_like(_original(*args, **kwargs))

            module.forward = forward
            patched.append(module)
    try:
        yield
    finally:
        for module in patched:
            del module.forward
        for name, fn in saved.items():
            setattr(mod, name, fn)


# --------------------------------------------------------------------------- tiny configs

# Sizes the sweep shrinks, wherever the config class has the key. The head width is kept (it
# decides the frequencies): the hidden size becomes heads x head width.
TINY: dict[str, Any] = {
    "vocab_size": 128,
    "intermediate_size": 32,
    "moe_intermediate_size": 16,
    "shared_expert_intermediate_size": 16,
    "expert_intermediate_size": 16,
    "ffn_hidden_size": 32,
    "num_experts": 4,
    "num_local_experts": 4,
    "n_routed_experts": 4,
    "num_experts_per_tok": 2,
    "moe_num_experts": 4,
    "moe_topk": 2,
    "n_group": 1,
    "topk_group": 1,
    "n_shared_experts": 1,
    "num_shared_experts": 1,
    "kv_lora_rank": 16,
    "q_lora_rank": 16,
    "pad_token_id": 0,
    "bos_token_id": 1,
    "eos_token_id": 2,
    "tie_word_embeddings": False,
    "use_cache": False,
    "moe_k": 2,
    # Sizes with nothing to do with the attention's RoPE that cost the most where left at the
    # default: Gemma 3n's and Gemma 4's per-layer input embeddings (a vocabulary of 262144 rows
    # each), Llama 4's dense MLP (16384 wide, on its 8200-token run), the heads of linear
    # attention (no RoPE; Bailing's per-dimension decay grows with heads x width) and of the
    # sparse-attention indexers (they pick the keys; every key is picked below index_topk),
    # DeepSeek-V4's grouped output projection, Dots 3's shared experts.
    "vocab_size_per_layer_input": 128,
    "intermediate_size_mlp": 32,
    "linear_num_heads": 2,
    "linear_num_key_heads": 2,
    "linear_num_value_heads": 2,
    "index_n_heads": 2,
    "o_lora_rank": 16,
    "shared_experts_intermediate_size": 16,
}
HEADS = 2


def head_width(config) -> int:
    """The attention head width the family's config states or implies.

    The global one where layers may override it (Gemma 4's ``per_layer_config``).
    """
    values = config.to_dict()
    if values.get("head_dim"):
        return int(values["head_dim"])
    return _value(config, "hidden_size") // _value(config, "num_attention_heads")


def _value(config, name: str) -> Any:
    """A config value by its standard name, through the class's attribute_map aliases."""
    values = config.to_dict()
    real = (getattr(type(config), "attribute_map", {}) or {}).get(name, name)
    return values.get(real, values.get(name))


def _per_layer_lists(config, n: int) -> dict[str, list]:
    """The config's lists with one entry per layer and a few distinct values (types, flags)."""
    out = {}
    for key, value in config.to_dict().items():
        if isinstance(value, list) and len(value) == n and n > 1:
            try:
                distinct = set(map(repr, value))
            except TypeError:
                continue
            if len(distinct) <= 4 and len(distinct) < n:
                out[key] = value
    return out


# Keys of to_dict() that are bookkeeping, not arguments of the config class.
_NOT_ARGS = {"model_type", "transformers_version", "architectures", "_name_or_path", "dtype"}
# Keys derived from the layer count: the class rebuilds them for the tiny one.
_DERIVED = {"per_layer_config"}


def default_config(config_class: type, family: str):
    """The family's default text config.

    The family's top-level config class's text config when it is of this class (a wrapper may
    fill in what the text config class leaves empty), else the class's own defaults.
    """
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if family in CONFIG_MAPPING:
            top = CONFIG_MAPPING[family]()
            text = top.get_text_config()
            if type(text) is config_class:
                return text
        return config_class()


def _all_layer_lists(config, n: int) -> dict[str, list]:
    """Every list of the config with one entry per layer (the class rebuilds them for n)."""
    return {
        k: v for k, v in config.to_dict().items() if isinstance(v, list) and len(v) == n and n > 1
    }


def tiny_config(
    config_class: type,
    family: str,
    overrides: dict[str, Any] | None = None,
    max_layers: int = 16,
    default=None,
):
    """The family's default config with tiny sizes and enough layers for every per-layer value.

    ``default`` replaces the family's default config (a released config: ``tests/corpus``).

    ``overrides`` are config arguments on top (``special.py``), and three directives:
    ``_width`` (the head width, where the default config's cannot run its own model),
    ``_layers`` (a fixed layer count, or ``(key, count)`` where the count has another name) and
    ``_derived`` (keys the class derives from the sizes: left for it to derive again).

    Returns ``(default, tiny, kwargs, lists)``: the default config, the tiny config, the
    arguments that built it (for rebuilding with other ``rope_parameters``) and the per-layer
    lists whose values the tiny layers cover.
    """
    overrides = dict(overrides or {})
    width_override = overrides.pop("_width", None)
    derived = set(overrides.pop("_derived", ()))
    layers_override = overrides.pop("_layers", None)
    if default is None:
        default = default_config(config_class, family)
    base = default.to_dict()
    have = set(base)
    if dataclasses.is_dataclass(config_class):
        have |= {f.name for f in dataclasses.fields(config_class)}
    n_default = getattr(default, "num_hidden_layers", None) or _value(default, "num_hidden_layers")
    lists = _per_layer_lists(default, n_default)
    layer_lists = _all_layer_lists(default, n_default)
    kwargs = {
        k: v
        for k, v in base.items()
        if k not in _NOT_ARGS | _DERIVED | derived and k not in layer_lists
    }
    # attribute_map aliases (n_group -> num_expert_group): set the real name, not the alias
    aliases = getattr(config_class, "attribute_map", {}) or {}
    tiny_sizes = {aliases.get(k, k): v for k, v in TINY.items()}
    have |= set(aliases.values())
    for key, value in tiny_sizes.items():
        if key not in have:
            continue
        if isinstance(base.get(key), list):  # one value per layer (ERNIE 4.5 VL)
            value = [value] * len(base[key])
        kwargs[key] = value
    if "first_k_dense_replace" in have:
        kwargs["first_k_dense_replace"] = min(1, base.get("first_k_dense_replace") or 0)
    for key in ("q_lora_rank", "kv_lora_rank"):
        if key in have and base.get(key) is None:
            kwargs[key] = None  # no low-rank projection in the family's default
    width = width_override or head_width(default)
    heads_default = _value(default, "num_attention_heads")
    kv_default = _value(default, "num_key_value_heads") or heads_default
    sizes = {"num_attention_heads": HEADS, "hidden_size": HEADS * width}
    if "num_key_value_heads" in have or "num_key_value_heads" in aliases:
        sizes["num_key_value_heads"] = HEADS if kv_default >= heads_default else 1
    if "head_dim" in have or width_override:
        sizes["head_dim"] = width
    kwargs.update({aliases.get(k, k): v for k, v in sizes.items()})
    for key, value in overrides.items():  # a callable override sees the sizes chosen so far
        kwargs[key] = value(kwargs) if callable(value) else value

    layer_key = aliases.get("num_hidden_layers", "num_hidden_layers")
    counts = range(2, max(2, min(max_layers, n_default)) + 1)
    if layers_override is not None:
        if isinstance(layers_override, tuple):
            layer_key, layers_override = layers_override
        counts = [layers_override]

    # sizes given per layer (Gemma 3n's intermediate_size): cut to the tiny layers at the tiny
    # size, not at the default's (its widths decide nothing about RoPE); not where the caller
    # gives the list itself (the corpus keeps the released values)
    shrunk = {k for k in tiny_sizes if k in layer_lists and k in kwargs and k not in overrides}

    def make(n, explicit):
        trial = dict(kwargs, **{layer_key: n})
        trial.update(
            {
                key: [tiny_sizes[key]] * n if key in shrunk else layer_lists[key][:n]
                for key in explicit
            }
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return config_class(**trial), trial

    tiny = trial = None
    for n in counts:
        try:
            tiny, trial = make(n, ())
            got = tiny.to_dict()
            n_tiny = tiny.num_hidden_layers
            bad = [
                k
                for k in layer_lists
                if k in got and (not isinstance(got[k], list) or len(got[k]) != n_tiny)
            ]
            if bad:
                tiny, trial = make(n, bad)
        except Exception:  # noqa: BLE001 (lists the class does not rebuild)
            tiny, trial = make(n, tuple(layer_lists))
        got = tiny.to_dict()
        if all(
            set(map(repr, got.get(k) or [])) >= set(map(repr, v))
            for k, v in lists.items()
            if k not in shrunk
        ):
            break
    return default, tiny, trial, sorted(lists)


def build(model_class: type, config, weights: dict | None = None) -> torch.nn.Module:
    """The family's model with random weights (seed 0), or with ``weights`` where they fit.

    Reusing the default model's weights for the scaled variants skips the initialisation,
    most of the sweep's time otherwise.
    """
    from transformers.initialization import no_init_weights

    register()
    config = copy.deepcopy(config)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = None
        if weights is not None:
            with no_init_weights():
                model = model_class(config)
            try:
                model.load_state_dict(weights, strict=True)
            except RuntimeError:
                model = None
        if model is None:
            torch.manual_seed(0)
            model = model_class(config)
        model.set_attn_implementation(CAPTURE)
    return model.eval()


def modeling(family: str):
    return importlib.import_module(f"transformers.models.{family}.modeling_{family}")


def configuration(family: str):
    return importlib.import_module(f"transformers.models.{family}.configuration_{family}")


# --------------------------------------------------------------------------- running

# Families whose attention does not go through the AttentionInterface (see the module docstring).
SDPA_FAMILIES = {"falcon": "calls torch's scaled_dot_product_attention itself"}
ATTN_METHOD_FAMILIES = {"gpt_neox_japanese": "computes attention in its own _attn method"}


@contextlib.contextmanager
def call_context(model, family: str, identity: bool):
    with contextlib.ExitStack() as stack:
        if identity:
            stack.enter_context(identity_rotary(model, family))
            from .special import SPECIAL

            attrs = SPECIAL.get(family, {}).get("identity_attrs")
            if attrs:
                stack.enter_context(module_attrs(model, attrs))
        if family in SDPA_FAMILIES:
            stack.enter_context(patched_sdpa())
        if family in ATTN_METHOD_FAMILIES:
            patch_attn_method(model)
        yield


def _codebooks(model, ids, positions):
    streams = model.config.num_codebooks + 1
    return {"input_ids": ids[..., None].expand(-1, -1, streams).contiguous()}


def _audio_codebooks(model, ids, positions):
    streams = model.config.num_codebooks
    return {"input_ids": ids[..., None].expand(-1, -1, streams).contiguous()}


def _image_embeddings(model, ids, positions):
    vision = model.config.vision_config
    width = getattr(vision, "embed_dim", None) or vision.hidden_size
    batch, seq = ids.shape
    return {
        "input_ids": ids,
        "image_encoder_embeddings": torch.zeros(batch, 1, 3, width),
        "image_attention_mask": torch.ones(batch, seq, 1, dtype=torch.long),
    }


def _drafter(model, ids, positions):
    """A drafter's noise embeddings (a fixed function of the ids) and an empty context."""
    width = model.config.hidden_size
    noise = torch.sin(ids[..., None].double() * torch.arange(1, width + 1) / width).float()
    context = model.encoder.fc.in_features if hasattr(model.encoder, "fc") else None
    layers = len(getattr(model.config, "target_layer_ids", []) or [1])
    context = torch.zeros(ids.shape[0], 0, context or width * layers)
    return {"noise_embeds": noise, "context_hidden_states": context}


def _encoder_states(model, ids, positions):
    encoder = getattr(model.config, "encoder_config", None)
    width = (encoder or model.config).hidden_size
    return {"input_ids": ids, "encoder_hidden_states": torch.zeros(ids.shape[0], 3, width)}


def _time_condition(model, ids, positions):
    width = model.config.hidden_size
    return {"input_ids": ids, "t_cond": torch.zeros(ids.shape[0], 1, width)}


def _one_patch(model, ids, positions):
    return {"input_ids": ids, "num_patches": 1, "patch_ids": torch.zeros_like(ids)}


# Families whose text model takes more than token ids (special.py names the builder).
INPUTS = {
    "codebooks": _codebooks,
    "audio_codebooks": _audio_codebooks,
    "image_embeddings": _image_embeddings,
    "encoder_states": _encoder_states,
    "drafter": _drafter,
    "time_condition": _time_condition,
    "one_patch": _one_patch,
}


@contextlib.contextmanager
def module_attrs(model: torch.nn.Module, attrs: dict[str, Any]):
    """Set attributes on every module that has them, for the duration."""
    saved = []
    for module in model.modules():
        for name, value in attrs.items():
            if hasattr(module, name):
                saved.append((module, name, getattr(module, name)))
                setattr(module, name, value)
    try:
        yield
    finally:
        for module, name, value in saved:
            setattr(module, name, value)


def forward(model, family: str, ids: torch.Tensor, positions: torch.Tensor):
    """The family's text model on token ids at the given position_ids."""
    from .special import SPECIAL

    builder = SPECIAL.get(family, {}).get("inputs")
    inputs = INPUTS[builder](model, ids, positions) if builder else {"input_ids": ids}
    if SPECIAL.get(family, {}).get("no_masks"):
        # prepared masks, one per layer type, all None: the model builds none (the capture
        # ignores them; attention contributes nothing)
        types = getattr(model.config, "layer_types", None) or ["full_attention"]
        inputs["attention_mask"] = dict.fromkeys(types)
    if SPECIAL.get(family, {}).get("inject_positions"):
        # the model makes its own positions (0, 1, 2, ...): hand ours to its rotary modules
        with injected_positions(model, positions):
            return model(**inputs)
    return model(**inputs, position_ids=positions, use_cache=False)


@contextlib.contextmanager
def injected_positions(model: torch.nn.Module, positions: torch.Tensor):
    """Every rotary module computes its tables at ``positions`` whatever it is given."""
    patched = []
    for module in model.modules():
        if type(module).__name__.endswith("RotaryEmbedding"):
            original = module.forward

            def forward(x, position_ids=None, *args, _original=original, **kwargs):
                return _original(x, positions, *args, **kwargs)

            module.forward = forward
            patched.append((module, original))
    try:
        yield
    finally:
        for module, original in patched:
            module.forward = original
