"""Device selection (posenc_ref/device.py), with the machine's GPUs faked where needed."""

import pytest
import torch

import posenc_ref
from posenc_ref import device as device_module
from posenc_ref import select_device
from posenc_ref.device import ENV_VAR, available_devices, compute_device


@pytest.fixture
def machine(monkeypatch):
    """Fake a machine: ``machine(cuda=2, mps=False)``; the env variable is cleared first."""
    monkeypatch.delenv(ENV_VAR, raising=False)

    def fake(cuda: int = 0, mps: bool = False) -> None:
        monkeypatch.setattr(device_module, "_cuda_device_count", lambda: cuda)
        monkeypatch.setattr(device_module, "_mps_available", lambda: mps)

    return fake


@pytest.mark.parametrize(
    ("cuda", "mps", "expected"),
    [(2, True, "cuda"), (1, False, "cuda"), (0, True, "mps"), (0, False, "cpu")],
)
@pytest.mark.parametrize("preferred", [None, "auto", "AUTO"])
def test_auto_prefers_cuda_then_mps_then_cpu(machine, cuda, mps, expected, preferred):
    machine(cuda=cuda, mps=mps)
    assert select_device(preferred) == torch.device(expected)


@pytest.mark.parametrize(
    ("request_", "cuda", "mps", "expected"),
    [
        ("cpu", 2, True, "cpu"),
        ("cuda", 1, False, "cuda"),
        ("cuda:1", 2, False, "cuda:1"),
        (torch.device("cuda", 0), 1, False, "cuda:0"),
        ("mps", 0, True, "mps"),
        ("meta", 0, False, "meta"),  # no data, so any machine has it (shape inference)
        (torch.device("meta"), 2, True, "meta"),
    ],
)
def test_explicit_request_available(machine, request_, cuda, mps, expected):
    machine(cuda=cuda, mps=mps)
    assert select_device(request_) == torch.device(expected)


@pytest.mark.parametrize(
    ("request_", "cuda", "mps", "listed"),
    [
        ("cuda", 0, False, "available: cpu"),
        ("cuda:3", 1, False, "available: cuda:0, cpu"),
        ("mps", 2, False, "available: cuda:0, cuda:1, cpu"),
        ("mps", 0, False, "available: cpu"),
    ],
)
def test_unavailable_request_lists_available(machine, request_, cuda, mps, listed):
    machine(cuda=cuda, mps=mps)
    with pytest.raises(RuntimeError, match=f"not available; {listed}$"):
        select_device(request_)


@pytest.mark.parametrize("bad", ["tpu", "gpu", "cuda:x", ""])
def test_unknown_device_type(machine, bad):
    machine(cuda=1)
    with pytest.raises(ValueError, match="is not a device type"):
        select_device(bad)


@pytest.mark.parametrize("bad", [0, 1.5, ["cpu"]])
def test_wrong_type(machine, bad):
    machine()
    with pytest.raises(TypeError, match="preferred must be None, 'auto'"):
        select_device(bad)


def test_environment_variable_sets_default(machine, monkeypatch):
    machine(cuda=1, mps=True)
    monkeypatch.setenv(ENV_VAR, "cpu")
    assert select_device() == torch.device("cpu")
    # An explicit argument wins over the environment.
    assert select_device("auto") == torch.device("cuda")
    monkeypatch.setenv(ENV_VAR, "cuda:2")
    with pytest.raises(RuntimeError, match="cuda:2"):
        select_device()


def test_available_devices_lists_every_gpu(machine):
    machine(cuda=3, mps=False)
    assert available_devices() == ["cuda:0", "cuda:1", "cuda:2", "cpu"]


def test_mps_tables_are_computed_on_cpu():
    """MPS has no float64, so angles for an mps table are formed on the CPU and moved."""
    assert compute_device("mps") == torch.device("cpu")
    assert compute_device(None) == torch.device("cpu")
    assert compute_device("cuda:1") == torch.device("cuda:1")


def test_real_machine_auto_is_usable():
    """Whatever this machine has, auto picks something a tensor can be made on."""
    dev = select_device("auto")
    assert torch.zeros(1, device=dev).device.type == dev.type


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_tables_match_cpu():
    """On a real GPU, tables are made there and equal the CPU ones (float64 angles on both)."""
    dev = select_device("cuda")
    table = posenc_ref.sinusoidal(4096, 128, device=dev)
    assert table.device.type == "cuda"
    torch.testing.assert_close(table.cpu(), posenc_ref.sinusoidal(4096, 128), rtol=0, atol=1e-7)


@pytest.mark.gpu
@pytest.mark.skipif(not device_module._mps_available(), reason="needs Apple MPS")
def test_mps_tables_match_cpu():
    table = posenc_ref.sinusoidal(256, 64, device="mps")
    assert table.device.type == "mps"
    torch.testing.assert_close(table.cpu(), posenc_ref.sinusoidal(256, 64), rtol=0, atol=0)
