"""The backend table from Python (peat.Backend.table / .signature), and
peat.analyze handing device memory to the device's backend: the CUDA
backend's signature of torch CUDA tensors, the check that needs a GPU, runs in
the GPU bundle (scripts/gpu-bundle/torch_cuda_check.py); here the CPU backend's
table gives what peat.analyze gives, and device views reach the plugin."""
import ctypes

import numpy as np
import pytest

import peat
from peat import _capi


def test_table_layout_matches_the_library():
    table = peat.Backend.get("cpu").table
    assert table.struct_size == ctypes.sizeof(_capi.BackendApi)
    assert table.abi_major == 1 and table.name == b"cpu" and table.device_type == _capi.kDLCPU
    assert table.signature_accumulate and table.last_error


def test_cpu_backend_signature_equals_analyze(rng):
    g = rng.random((40, 50), dtype=np.float32)
    c = (g * np.float32(1 + 3e-7)).astype(np.float32)
    c[3, 4] = -c[3, 4]
    cpu = peat.Backend.get("cpu")
    assert cpu.signature(g, c, reduction_length=16).to_dict() == \
        peat.analyze(g, c, reduction_length=16).to_dict()
    sig, smap = cpu.signature(g, c, None, peat.empty_spatial_map(g))
    ref_sig, ref_map = peat.analyze(g, c, spatial_map=True)
    assert sig.to_dict() == ref_sig.to_dict()
    assert smap.mismatch_count == ref_map.mismatch_count == 1 and smap.first_mismatch == 3 * 50 + 4
    # merged piece by piece: the same counts as in one go
    half = cpu.signature(g[:20], c[:20])
    assert cpu.signature(g[20:], c[20:], half).count == g.size
    assert half.count == g.size // 2  # the given signature is left as it was


def test_device_memory_goes_to_the_device_backend(rng):
    """A view marked as CUDA memory is analyzed by the "cuda" backend (here:
    no driver, or no plugin built, says so), not refused as host-only."""
    g = rng.random(64, dtype=np.float32)
    v = peat.view(g)
    dev = peat.View(v.dl.data, (64,), (1,), _capi.kDLFloat, 32, g, _capi.kDLCUDA, 0)
    with pytest.raises(peat.PeatError) as e:
        peat.analyze(dev, dev)
    assert "cuda" in str(e.value) and "not host memory" not in str(e.value)


def test_torch_devices_other_than_cpu_and_gpu_are_refused():
    torch = pytest.importorskip("torch")
    with pytest.raises(TypeError, match="meta"):
        peat.view(torch.empty(3, device="meta"))
