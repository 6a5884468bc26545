"""Training to a convergence criterion, evaluation, and the fine-tune at the longer length.

Every function here is deterministic given its seeds: batches come from ``torch.Generator`` objects
seeded by names (:func:`seed_of`), and the caller runs one thread with
``torch.use_deterministic_algorithms(True)``. The training batches depend on the task and the
seed only, so runs of different encodings (or bases) with one seed see the same batches, in the
same order, as far as each trains: differences between them are paired.
"""

from __future__ import annotations

import math
import time
import zlib
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from .model import TinyTransformer
from .tasks import MIN_LENGTH, VOCAB, make_batch

DISTANCE_BINS = 16
"""The passkey's needle distances at an evaluation length ``L`` are counted in this many bins."""


def seed_of(*parts: object) -> int:
    """A stable 31-bit seed from names and numbers (``hash`` is salted per process)."""
    return zlib.crc32(repr(parts).encode()) & 0x7FFFFFFF


@dataclass(frozen=True)
class Config:
    """One experiment's model, training, stopping rule and evaluation, all fixed by these values."""

    name: str
    train_len: int  # L0: the longest training sequence
    dim: int
    heads: int
    layers: int
    batch: int
    lr: float
    warmup: int  # steps of linear warm-up, then the learning rate stays constant
    max_steps: int  # the cap: a run that has not met the criterion by then has not converged
    check_every: int  # steps between two looks at the validation set
    target: float  # converged: exact-match accuracy at L0 on the validation set >= target
    val_batch: int
    eval_batch: int
    eval_lengths: tuple[int, ...] = (32, 40, 48, 64, 128, 256)  # L0 first; multiples of 4
    p_fraction: float = 0.25  # Gemma 4's global layers
    xpos_scale_base_ratio: float = 0.5  # B = L0 / 2 (torchscale's 512 hardly decays at L0 = 32)
    t5_buckets: int = 32  # causal buckets, max_distance = L0: training reaches the last one
    fire_width: int = 32
    finetune_max_steps: int = 400  # the fine-tune's cap; it stops earlier when converged
    finetune_check_every: int = 50
    finetune_multiple: int = 8  # fine-tune at this many times L0, with s = this
    finetune_batch: int = 8
    finetune_lr: float = 1e-3
    dtype: str = "float32"

    def train_lengths(self, task: str) -> list[int]:
        """Training lengths, one drawn per step: multiples of 4 from L0/2 to L0."""
        lengths = range(self.train_len // 2, self.train_len + 1, 4)
        return [n for n in lengths if n >= MIN_LENGTH[task]]


def build_model(config: Config, encoding: str, seed: int, base: float) -> TinyTransformer:
    """The model of one job, its weights drawn from ``seed`` (the same for every base)."""
    torch.manual_seed(seed_of("weights", encoding, seed))
    return TinyTransformer(
        encoding,
        vocab=VOCAB,
        dim=config.dim,
        heads=config.heads,
        layers=config.layers,
        train_len=config.train_len,
        base=base,
        p_fraction=config.p_fraction,
        xpos_scale_base=config.xpos_scale_base_ratio * config.train_len,
        t5_buckets=config.t5_buckets,
        fire_width=config.fire_width,
    ).to(getattr(torch, config.dtype))


def _step(model, optimizer, batch, **forward) -> float:
    logits = model(batch.inputs, **forward)
    loss = F.cross_entropy(logits[batch.mask], batch.targets[batch.mask])
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    model.clamp_()
    return float(loss.detach())


def _until_converged(
    model: TinyTransformer, batches, val, *, lr: float, warmup: int, max_steps: int,
    check_every: int, target: float, **forward,
) -> dict:  # fmt: skip
    """Adam on ``batches()`` until exact match on ``val`` reaches ``target``, or ``max_steps``.

    Every ``check_every`` steps the model is scored on the fixed set ``val`` (with ``forward``'s
    method and factor); training stops at the first look that meets ``target``. Returns
    ``steps``, ``converged``, ``val_exact`` (at the last look) and ``final_loss`` (mean of the
    last ``check_every`` steps' losses).
    """
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: min(1.0, (step + 1) / warmup)
    )
    losses, val_exact, steps = [], 0.0, 0
    while steps < max_steps:
        model.train()
        losses.append(_step(model, optimizer, batches(), **forward))
        schedule.step()
        steps += 1
        if steps % check_every == 0:
            val_exact = score(model, val, **forward)["exact"] / val.mask.shape[0]
            if val_exact >= target:
                break
    tail = losses[-check_every:]
    return {
        "steps": steps,
        "converged": val_exact >= target,
        "val_exact": val_exact,
        "final_loss": finite(sum(tail) / len(tail)),
    }


def train(model: TinyTransformer, config: Config, task: str, seed: int) -> dict:
    """Train at lengths up to L0 until exact match at L0 reaches ``config.target``.

    The validation set (``val_batch`` sequences at L0) is drawn from its own seed and never used
    for the test; the batches of each step from the task's and seed's generator, one length per
    step, drawn from :meth:`Config.train_lengths`. See :func:`_until_converged`.
    """
    g = torch.Generator().manual_seed(seed_of("train", task, seed))
    lengths = config.train_lengths(task)
    val_g = torch.Generator().manual_seed(seed_of("val", task, seed))
    val = make_batch(task, config.val_batch, config.train_len, val_g)

    def batches():
        length = lengths[int(torch.randint(len(lengths), (1,), generator=g))]
        return make_batch(task, config.batch, length, g)

    return _until_converged(
        model, batches, val, lr=config.lr, warmup=config.warmup, max_steps=config.max_steps,
        check_every=config.check_every, target=config.target,
    )  # fmt: skip


def finetune(model: TinyTransformer, config: Config, task: str, seed: int, method: str) -> dict:
    """Fine-tune in place at ``finetune_multiple * L0`` with ``method`` at that factor.

    As the PI and YaRN papers do, at a small scale: fresh Adam state, a lower constant learning
    rate, batches at the new length only, until exact match on a validation set at that length
    meets the target or the cap ``finetune_max_steps``. ``method`` ``"none"`` fine-tunes the
    unscaled model at the new length (plain extrapolation, PI's baseline).
    """
    g = torch.Generator().manual_seed(seed_of("finetune", task, seed))
    length, factor = config.finetune_multiple * config.train_len, float(config.finetune_multiple)
    val_g = torch.Generator().manual_seed(seed_of("finetune-val", task, seed))
    val = make_batch(task, config.val_batch, length, val_g)
    return _until_converged(
        model, lambda: make_batch(task, config.finetune_batch, length, g), val,
        lr=config.finetune_lr, warmup=1, max_steps=config.finetune_max_steps,
        check_every=config.finetune_check_every, target=config.target, method=method,
        factor=factor,
    )  # fmt: skip


@torch.no_grad()
def score(model: TinyTransformer, batch, *, method: str = "none", factor: float = 1.0) -> dict:
    """Counts on one batch: tokens, whole answers, first tokens, the targets' log-probability.

    ``correct``/``scored``: scored tokens predicted (argmax) right; ``exact``/``sequences``:
    sequences whose every scored token is right (the greedy answer is the true one);
    ``first``: sequences whose first scored token is right (for passkey: the model found the
    marker); ``logprob``: the sum of the targets' log-probabilities over the scored tokens (it
    moves with any change of the logits, where counts can stay put). For passkey also
    ``by_distance``: per bin of the needle's distance, ``[sequences, exact, first]``.
    """
    model.eval()
    logits = model(batch.inputs, method=method, factor=factor)
    mask = batch.mask
    right = (logits.argmax(-1) == batch.targets) | ~mask  # (B, L); unscored count as right
    first_index = mask.float().argmax(1, keepdim=True)  # (B, 1): first scored target
    first = right.gather(1, first_index).squeeze(1)  # (B,)
    exact = right.all(1)
    logp = torch.log_softmax(logits.double(), -1).gather(-1, batch.targets[..., None])[..., 0]
    counts = {
        "scored": int(mask.sum()),
        "correct": int((right & mask).sum()),
        "sequences": int(mask.shape[0]),
        "exact": int(exact.sum()),
        "first": int(first.sum()),
        "logprob": round(float(logp[mask].sum()), 6),
    }
    if batch.distance is not None:
        length = batch.inputs.shape[1]
        bins = (batch.distance * DISTANCE_BINS // length).clamp(max=DISTANCE_BINS - 1)
        counts["by_distance"] = [
            [int((bins == b).sum()), int(exact[bins == b].sum()), int(first[bins == b].sum())]
            for b in range(DISTANCE_BINS)
        ]
    return counts


def evaluate(
    model: TinyTransformer, config: Config, task: str, seed: int, length: int, method: str,
    factor: float,
) -> dict:  # fmt: skip
    """:func:`score` on the fixed test set of ``(task, seed, length)``, with its time."""
    g = torch.Generator().manual_seed(seed_of("eval", task, seed, length))
    batch = make_batch(task, config.eval_batch, length, g)
    start = time.process_time()
    counts = score(model, batch, method=method, factor=factor)
    return {**counts, "eval_cpu_s": round(time.process_time() - start, 3)}


def finite(value: float) -> float:
    """``value`` if finite, else raise: a NaN loss is a bug to report, never a number to store."""
    if not math.isfinite(value):
        raise FloatingPointError(f"non-finite value {value}")
    return value
