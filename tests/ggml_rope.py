"""ggml's RoPE kernel, built from the llama-cpp-python source distribution and called by ctypes.

ggml is the tensor library under llama.cpp. Its CPU backend forms each pair's angle by repeated
float32 multiplication (``theta *= theta_scale`` in ``ggml_rope_cache_init``, with
``theta_scale = powf(base, -2/n_dims)``): a correct float32 kernel whose rounding differs from a
``pow`` per pair, which is why the kit is checked against it. Nothing of ggml is kept in this
repository: :func:`ggml_library` downloads the pinned source distribution from PyPI with pip,
extracts its ``vendor/llama.cpp/ggml`` folder and builds the two shared libraries the rotation
needs (``ggml-base``, ``ggml-cpu``) with cmake, once, into ``.cache/`` (gitignored; about two
minutes of CPU time). Without cmake, a C/C++ compiler or the download, it returns the reason,
and the tests skip with it.

:class:`Ggml` binds the handful of functions a rotation needs: a context, two tensors,
``ggml_rope_ext`` (``ggml_rope_multi`` for M-RoPE), a graph and its computation.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

import numpy as np

SDIST = "llama-cpp-python==0.3.36"  # its vendor/llama.cpp/ggml is ggml 0.25.3
CACHE = Path(os.environ.get("POSENC_REF_GGML_CACHE", Path(__file__).parents[1] / ".cache"))
LIBRARIES = ("libggml-base.so", "libggml-cpu.so")

# ggml.h: tensor types and RoPE modes
F32, I32 = 0, 26
NORMAL, NEOX, MROPE, IMROPE = 0, 2, 8, 40


def ggml_library(cache: Path = CACHE) -> Path | str:
    """The folder holding the built libraries, or why they cannot be built here."""
    target = cache / f"ggml-{SDIST.split('==')[1]}"
    if all((target / name).is_file() for name in LIBRARIES):
        return target
    missing = [tool for tool in ("cmake", "cc", "c++") if shutil.which(tool) is None]
    if missing:
        return f"building ggml needs {', '.join(missing)}"
    cache.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=cache) as work:
        work = Path(work)
        download = subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary",
             ":all:", SDIST, "-d", str(work)],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        archives = list(work.glob("*.tar.gz"))
        if download.returncode != 0 or not archives:
            return f"cannot download {SDIST} from PyPI: {download.stderr.strip()[-300:]}"
        with tarfile.open(archives[0]) as archive:
            members = [m for m in archive.getmembers() if "/vendor/llama.cpp/ggml/" in m.name]
            archive.extractall(work, members=members, filter="data")
        source = next(work.glob("*/vendor/llama.cpp/ggml"))
        (source / "ggml.pc.in").touch()  # the sdist leaves it out; cmake only copies it
        build = work / "build"
        steps = [
            ["cmake", "-S", str(source), "-B", str(build), "-DCMAKE_BUILD_TYPE=Release",
             "-DBUILD_SHARED_LIBS=ON", "-DGGML_NATIVE=OFF", "-DGGML_OPENMP=OFF",
             "-DGGML_BUILD_TESTS=OFF", "-DGGML_BUILD_EXAMPLES=OFF"],
            ["cmake", "--build", str(build), "--target", "ggml-cpu", "-j", str(os.cpu_count())],
        ]  # fmt: skip
        for step in steps:
            run = subprocess.run(step, capture_output=True, text=True, check=False)
            if run.returncode != 0:
                return f"building ggml failed: {(run.stdout + run.stderr).strip()[-500:]}"
        staging = work / "lib"
        staging.mkdir()
        for built in build.rglob("libggml-*.so*"):
            shutil.copy2(built, staging / built.name, follow_symlinks=True)
        staging.rename(target)
    return target


class _InitParams(ctypes.Structure):
    _fields_ = [
        ("mem_size", ctypes.c_size_t),
        ("mem_buffer", ctypes.c_void_p),
        ("no_alloc", ctypes.c_bool),
    ]


class Ggml:
    """The ggml functions a rotation needs, bound with ctypes."""

    def __init__(self, folder: Path) -> None:
        self.base = ctypes.CDLL(str(folder / LIBRARIES[0]), mode=ctypes.RTLD_GLOBAL)
        self.cpu = ctypes.CDLL(str(folder / LIBRARIES[1]), mode=ctypes.RTLD_GLOBAL)
        p, i64, f = ctypes.c_void_p, ctypes.c_int64, ctypes.c_float
        signatures = {
            "ggml_init": ([_InitParams], p),
            "ggml_free": ([p], None),
            "ggml_new_tensor_1d": ([p, ctypes.c_int, i64], p),
            "ggml_new_tensor_3d": ([p, ctypes.c_int, i64, i64, i64], p),
            "ggml_get_data": ([p], p),
            "ggml_new_graph": ([p], p),
            "ggml_build_forward_expand": ([p, p], None),
            "ggml_rope_ext": ([p, p, p, p, ctypes.c_int, ctypes.c_int, ctypes.c_int] + [f] * 6, p),
            "ggml_rope_multi": (
                [p, p, p, p, ctypes.c_int, ctypes.c_int * 4, ctypes.c_int, ctypes.c_int] + [f] * 6,
                p,
            ),
        }
        for name, (args, result) in signatures.items():
            function = getattr(self.base, name)
            function.argtypes, function.restype = args, result
        compute = self.cpu.ggml_graph_compute_with_ctx
        compute.argtypes, compute.restype = [p, p, ctypes.c_int], ctypes.c_int

    def rope(
        self,
        x: np.ndarray,
        positions: np.ndarray,
        *,
        n_dims: int,
        mode: int,
        base: float,
        sections: tuple[int, int, int, int] | None = None,
        n_ctx_orig: int = 0,
        freq_scale: float = 1.0,
        ext_factor: float = 0.0,
        attn_factor: float = 1.0,
        beta_fast: float = 32.0,
        beta_slow: float = 1.0,
        freq_factors: np.ndarray | None = None,
    ) -> np.ndarray:
        """Rotate ``x`` ``(n_tokens, n_heads, head_dim)`` float32 at int32 ``positions``.

        ``positions`` is ``(n_tokens,)``, or ``(4, n_tokens)`` rows for ``ggml_rope_multi``
        (``sections`` given: time, height, width, extra). ``freq_factors`` ``(n_dims // 2,)``
        divides each pair's angle (llama.cpp's ``rope_freqs``: Llama 3.1, LongRoPE).
        """
        x = np.ascontiguousarray(x, dtype=np.float32)
        tokens, heads, width = x.shape
        pos = np.ascontiguousarray(positions, dtype=np.int32).reshape(-1)
        size = 4 * x.nbytes + pos.nbytes + (1 << 20)  # tensors, graph and a margin
        base_lib = self.base
        ctx = base_lib.ggml_init(_InitParams(size, None, False))
        if not ctx:
            raise MemoryError("ggml_init failed")
        try:
            a = base_lib.ggml_new_tensor_3d(ctx, F32, width, heads, tokens)
            ctypes.memmove(base_lib.ggml_get_data(a), x.ctypes.data, x.nbytes)
            b = base_lib.ggml_new_tensor_1d(ctx, I32, pos.size)
            ctypes.memmove(base_lib.ggml_get_data(b), pos.ctypes.data, pos.nbytes)
            c = None
            if freq_factors is not None:
                factors = np.ascontiguousarray(freq_factors, dtype=np.float32)
                c = base_lib.ggml_new_tensor_1d(ctx, F32, factors.size)
                ctypes.memmove(base_lib.ggml_get_data(c), factors.ctypes.data, factors.nbytes)
            floats = (base, freq_scale, ext_factor, attn_factor, beta_fast, beta_slow)
            if sections is None:
                out = base_lib.ggml_rope_ext(ctx, a, b, c, n_dims, mode, n_ctx_orig, *floats)
            else:
                out = base_lib.ggml_rope_multi(
                    ctx, a, b, c, n_dims, (ctypes.c_int * 4)(*sections), mode, n_ctx_orig,
                    *floats,
                )  # fmt: skip
            graph = base_lib.ggml_new_graph(ctx)
            base_lib.ggml_build_forward_expand(graph, out)
            status = self.cpu.ggml_graph_compute_with_ctx(ctx, graph, 1)
            if status != 0:
                raise RuntimeError(f"ggml_graph_compute_with_ctx returned {status}")
            result = np.empty_like(x)
            ctypes.memmove(result.ctypes.data, base_lib.ggml_get_data(out), x.nbytes)
            return result
        finally:
            base_lib.ggml_free(ctx)


if __name__ == "__main__":
    # `make test` builds the library here, before pytest starts, like the rest of its setup: a
    # download and a C build (two minutes of CPU) are not the tests' time. The tests build it
    # themselves when run without make, and skip with the reason where it cannot be built.
    found = ggml_library()
    print(f"ggml: {found}" if isinstance(found, Path) else f"ggml not built: {found}")
