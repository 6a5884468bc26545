"""One policy for choosing where tensors live: cuda, then mps, then cpu."""

from __future__ import annotations

import os

import torch

ENV_VAR = "POSENC_REF_DEVICE"
"""Environment variable that sets the default of :func:`select_device` (e.g. ``cpu``)."""


# The two availability checks are module-level functions so that tests can fake a machine
# with GPUs (or without) by monkeypatching them.
def _cuda_device_count() -> int:
    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def _mps_available() -> bool:
    mps = getattr(torch.backends, "mps", None)
    return bool(mps is not None and mps.is_available())


def available_devices() -> list[str]:
    """List the devices this process can use, e.g. ``['cuda:0', 'cuda:1', 'cpu']``."""
    found = [f"cuda:{i}" for i in range(_cuda_device_count())]
    if _mps_available():
        found.append("mps")
    found.append("cpu")
    return found


def select_device(preferred: str | torch.device | None = None) -> torch.device:
    """Choose a device: the preferred one if it exists, else the best available one.

    Explained on the site: [devices](precision.md#precision-device).

    Parameters
    ----------
    preferred
        ``None`` or ``"auto"`` picks ``cuda`` if a GPU is visible, then ``mps``, then ``cpu``.
        When ``preferred`` is ``None`` the environment variable ``POSENC_REF_DEVICE`` (if set)
        is used instead. Any other value (``"cpu"``, ``"cuda"``, ``"cuda:1"``, ``"mps"`` or a
        ``torch.device``) is an explicit request: it is returned if available, otherwise a
        ``RuntimeError`` lists what is available. ``"meta"`` (tensors with shapes and dtypes
        but no data, for shape inference and deferred initialisation) is always available; it
        is never chosen by ``"auto"``.

    Returns
    -------
    torch.device

    Raises
    ------
    ValueError
        ``preferred`` is not a device type torch knows (``"tpu"``, ``"gpu"``).
    RuntimeError
        The requested device is not available on this machine.
    TypeError
        ``preferred`` is neither ``None``, a string nor a ``torch.device``.

    Examples
    --------
    >>> select_device("cpu")
    device(type='cpu')
    """
    if preferred is None:
        preferred = os.environ.get(ENV_VAR) or "auto"
    if isinstance(preferred, str) and preferred.strip().lower() == "auto":
        if _cuda_device_count() > 0:
            return torch.device("cuda")
        if _mps_available():
            return torch.device("mps")
        return torch.device("cpu")
    return _available("preferred", preferred)


def check_device(device: object, name: str = "device") -> torch.device:
    """Validate a ``device=`` argument: ``None`` is the CPU, anything else must exist here.

    The same rules and messages as an explicit :func:`select_device` request (``"auto"``
    included), naming ``name``, so a typo or a GPU this machine lacks is a clear
    ``ValueError`` / ``RuntimeError`` rather than an error from deep inside torch.
    """
    if device is None:
        return torch.device("cpu")
    if isinstance(device, str) and device.strip().lower() == "auto":
        return select_device("auto")
    return _available(name, device)


def _available(name: str, preferred: object) -> torch.device:
    if not isinstance(preferred, (str, torch.device)):
        raise TypeError(
            f"{name} must be None, 'auto', a device string or a torch.device, "
            f"got {type(preferred).__name__}"
        )
    try:
        device = torch.device(preferred)
    except RuntimeError as err:
        raise ValueError(
            f"{name}={preferred!r} is not a device type; use 'auto', 'cpu', 'cuda', "
            f"'cuda:N' or 'mps' (available here: {', '.join(available_devices())})"
        ) from err
    if device.type in ("cpu", "meta"):
        return device
    if device.type == "cuda":
        count = _cuda_device_count()
        index = 0 if device.index is None else device.index
        if index < count:
            return device
    elif device.type == "mps" and _mps_available():
        return device
    raise RuntimeError(
        f"{name}={str(device)!r} was requested but is not available; "
        f"available: {', '.join(available_devices())}"
    )


def compute_device(device: torch.device | str | None) -> torch.device:
    """Return the device on which float64 angles can be computed for ``device``.

    Apple's MPS backend has no float64, so tables meant for ``mps`` are computed on the CPU in
    float64 and moved afterwards; every other device computes in place.
    """
    device = torch.device("cpu") if device is None else torch.device(device)
    return torch.device("cpu") if device.type == "mps" else device
