"""The GPU loop's kernels, checked without a GPU, for `test_gpu.py`:

    NUMBA_ENABLE_CUDASIM=1 python tests/support/gpu_kernels.py record OUT.pkl CASE N STEPS
    python tests/support/gpu_kernels.py compile OUT.pkl

``record`` runs a case of ``tools/gpu_check.py`` on numba-cuda's simulator and keeps the numba
types of every kernel's arguments at its first launch; ``compile`` compiles each of those kernels
for the GPU (PTX for compute capability 9.0, NVVM, no driver), so a kernel that the CUDA target
cannot type or lower fails here, as it would on the device. It prints one line per kernel."""

import pickle
import sys
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))


def record(out, case, n, steps):
    import numba

    import gpu_check
    from dem import gpu
    from dem.simulation import Simulation

    seen = {}

    def recorded(name, launch, arguments):
        seen.setdefault(name, tuple(numba.typeof(a) for a in arguments))
        launch(*arguments)

    model, state, integrator, dt = gpu_check.build(case, n)
    sim = Simulation(model, state, integrator, dt, parallel=False, device="cuda")
    loop = gpu.DeviceLoop(sim.scheme, tuple(model.interactions))
    loop.kernels = gpu.WatchedKernels(loop.kernels, recorded)
    sim.loop.engine = loop.advance
    sim.advance(steps)
    with open(out, "wb") as file:
        pickle.dump((sim.scheme.name, tuple(model.interactions), seen), file)


def compile_all(path):
    from numba import cuda
    from numba.cuda import dispatcher

    from dem import device, gpu
    from dem.integrators import SCHEMES

    device._complete_ufuncs()
    # a device function's compile asks the current device for its compute capability: no driver here
    dispatcher.get_current_device = lambda: types.SimpleNamespace(compute_capability=(9, 0))
    with open(path, "rb") as file:
        scheme, names, seen = pickle.load(file)
    module = gpu.load_module(*gpu.kernels_source(SCHEMES[scheme], names))
    for name, signature in seen.items():
        try:
            cuda.compile_ptx(getattr(module, name).py_func, signature, cc=(9, 0))
            print(f"{name} ok", flush=True)
        except Exception as error:  # noqa: BLE001 (reported, and the test fails on it)
            print(f"{name} FAILED: {type(error).__name__}: {error}", flush=True)


if __name__ == "__main__":
    if sys.argv[1] == "record":
        record(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))
    else:
        compile_all(sys.argv[2])
