"""Shared timing harness: warm-up, interleaved repeats, medians with min–max, paired ratios.

Variants are timed round-robin (A B C A B C ...) rather than one after the other, so that a
slow spell of the machine (other jobs on the same cores, frequency changes) lands on every
variant instead of on whichever happened to run at that moment. Ratios are taken round by round
from the same interleaved rounds ("paired"), and summarised by their median and min–max.
"""

from __future__ import annotations

import gc
import math
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from importlib import metadata

import torch

__all__ = [
    "CPU_CLOCK",
    "cpu_clock",
    "Timing",
    "time_interleaved",
    "paired_ratio",
    "set_threads",
    "machine_info",
    "library_versions",
    "gpu_info",
]

# Packages whose versions are recorded with every result (missing ones are recorded as None).
RECORDED_PACKAGES = (
    "posenc-ref",
    "torch",
    "numpy",
    "mpmath",
    "transformers",
    "torchtune",
    "rotary-embedding-torch",
    "matplotlib",
)


# CPU time of the calling thread (page faults it takes included). With one torch thread all the
# work runs on this thread, and unlike wall time it does not count the time the thread waits
# for a core that another process holds: on a machine shared with other jobs it measures the
# code rather than the queue. Not for GPU work (waiting for the GPU is not CPU time) nor for
# several threads.
CPU_CLOCK = time.thread_time


def cpu_clock() -> Callable[[], float]:
    """The clock for CPU work: :data:`CPU_CLOCK` with one torch thread, else wall time."""
    return CPU_CLOCK if torch.get_num_threads() == 1 else time.perf_counter


class Timing:
    """Per-call times of one variant, one sample per interleaved round.

    Parameters
    ----------
    samples
        Seconds per call, one value per round (each the mean over ``number`` back-to-back calls).
    number
        Calls per sample; more than one only for calls too short to time singly.
    """

    def __init__(self, samples: list[float], number: int) -> None:
        self.samples = samples
        self.number = number

    @property
    def median(self) -> float:
        """Median seconds per call."""
        return statistics.median(self.samples)

    def to_json(self) -> dict:
        """Summary for the results file: median, min, max (seconds), repeats, number, samples."""
        return {
            "median_s": _sig(self.median),
            "min_s": _sig(min(self.samples)),
            "max_s": _sig(max(self.samples)),
            "repeats": len(self.samples),
            "number": self.number,
            "samples_s": [_sig(s) for s in self.samples],
        }


def _sig(x: float, digits: int = 4) -> float:
    """Round to a few significant digits: the timings are not more precise than that."""
    if x == 0 or not math.isfinite(x):
        return x
    return round(x, digits - 1 - math.floor(math.log10(abs(x))))


def time_interleaved(
    cases: Mapping[str, Callable[[], object]],
    *,
    repeats: int,
    warmup: int = 2,
    min_sample_s: float = 0.005,
    sync: Callable[[], None] | None = None,
    clock: Callable[[], float] = time.perf_counter,
) -> dict[str, Timing]:
    """Time several variants round-robin and return each one's per-round samples.

    Parameters
    ----------
    cases
        Variant name to a no-argument callable doing one unit of work.
    repeats
        Number of interleaved rounds (one sample per variant per round).
    warmup
        Untimed calls of every variant first (first-call allocation, lazy initialisation, caches).
    min_sample_s
        Calls shorter than this are repeated back to back within a sample, so that the timer's
        resolution and the loop overhead stay negligible.
    sync
        Called before reading the clock, e.g. ``torch.cuda.synchronize`` for GPU work, which is
        otherwise asynchronous and would time only the kernel launches.
    clock
        Seconds now: wall time by default; :data:`CPU_CLOCK` for single-threaded CPU work on a
        shared machine (see there).

    Returns
    -------
    dict of str to Timing
    """
    sync = sync or (lambda: None)
    numbers = {}
    for name, fn in cases.items():
        for _ in range(max(warmup, 1)):
            sync()
            start = clock()
            fn()
            sync()
            once = clock() - start
        numbers[name] = max(1, min(10_000, math.ceil(min_sample_s / max(once, 1e-9))))
    samples: dict[str, list[float]] = {name: [] for name in cases}
    gc.collect()
    was_enabled = gc.isenabled()
    gc.disable()  # a collection inside one variant's sample would be charged to it alone
    try:
        for _ in range(repeats):
            for name, fn in cases.items():
                number = numbers[name]
                sync()
                start = clock()
                for _ in range(number):
                    fn()
                sync()
                samples[name].append((clock() - start) / number)
    finally:
        if was_enabled:
            gc.enable()
    return {name: Timing(samples[name], numbers[name]) for name in cases}


def paired_ratio(numerator: Timing, denominator: Timing) -> dict:
    """Ratio of two variants timed in the same rounds: median and min–max of per-round ratios.

    Returns
    -------
    dict
        ``{"median": ..., "min": ..., "max": ...}``.
    """
    ratios = [a / b for a, b in zip(numerator.samples, denominator.samples, strict=True)]
    return {
        "median": _sig(statistics.median(ratios)),
        "min": _sig(min(ratios)),
        "max": _sig(max(ratios)),
    }


def set_threads(threads: int | None) -> int:
    """Fix torch's intra-op thread count and return it.

    ``torch.set_num_threads`` is called only when the count changes: on this project's CPU
    machine (torch 2.13 + MKL, OpenMP backend), calling it even with the current default count
    made every small MKL-backed elementwise call (``sin``, ``exp`` on 128 elements) take about
    7 ms instead of 1 µs, which would time the thread pool instead of the code.
    """
    if threads is not None and threads != torch.get_num_threads():
        torch.set_num_threads(threads)
    return torch.get_num_threads()


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _memory_gib() -> float | None:
    try:
        with open("/proc/meminfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return round(int(line.split()[1]) / 2**20, 1)
    except OSError:
        pass
    return None


def _transparent_hugepage() -> str | None:
    # e.g. "always [madvise] never": whether large allocations get 2 MiB pages unasked.
    try:
        with open("/sys/kernel/mm/transparent_hugepage/enabled", encoding="utf-8") as f:
            return f.read().strip()
    except OSError:
        return None


def machine_info() -> dict:
    """Describe the machine: CPU, cores, memory, OS, Python, and the load average right now."""
    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    return {
        "cpu": _cpu_model(),
        "logical_cores": os.cpu_count(),
        "memory_gib": _memory_gib(),
        "os": platform.platform(),
        "python": sys.version.split()[0],
        "load_average_1_5_15": [round(x, 2) for x in load] if load else None,
        "transparent_hugepage": _transparent_hugepage(),
        "date_utc": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }


def library_versions() -> dict[str, str | None]:
    """Installed versions of the libraries measured or used (``None`` when not installed)."""
    versions = {}
    for name in RECORDED_PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def gpu_info() -> str:
    """The CUDA device's name, or ``"no GPU"``."""
    if torch.cuda.is_available():
        return torch.cuda.get_device_name(0)
    return "no GPU"
