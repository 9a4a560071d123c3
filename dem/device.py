"""The CUDA device for `dem.gpu` and `dem.gpu_neighbors`: numba-cuda, checked and completed,
and arrays moved to and from it (or, under numba-cuda's simulator, ``NUMBA_ENABLE_CUDASIM=1``,
host copies standing for them)."""

import functools
import os
import sys

import numpy as np


class GPUError(RuntimeError):
    """The GPU path cannot run: no numba-cuda, no GPU, or a feature it does not run yet."""


def simulated():
    """Whether numba-cuda's simulator stands in for the GPU (``NUMBA_ENABLE_CUDASIM=1``)."""
    return os.environ.get("NUMBA_ENABLE_CUDASIM", "0") == "1"


@functools.cache
def cuda():
    """``numba.cuda``, checked: the GPU (or the simulator) is there and the numpy functions the
    kernels call on scalars compile for it."""
    if not hasattr(np, "row_stack"):  # numpy 2.5 removed it; numba-cuda 0.30 still registers it
        np.row_stack = np.vstack
    try:
        from numba import cuda as numba_cuda
    except ImportError as error:
        raise GPUError("device = 'cuda' needs numba-cuda: pip install '.[gpu]'") from error
    if simulated():
        # the simulator runs each GPU thread of a block as a Python thread, and its block runner
        # polls them in a loop that holds the interpreter lock: a switch interval of 0.5 ms instead
        # of 5 ms hands the lock to the simulated threads sooner (a simulated pile steps 1.5-2x faster)
        sys.setswitchinterval(5e-4)
    else:
        if not numba_cuda.is_available():
            raise GPUError("device = 'cuda': no CUDA GPU found (numba-cuda sees none); run on the CPU "
                           "(device = 'cpu') or set NUMBA_ENABLE_CUDASIM=1 to simulate one")
        _complete_ufuncs()
    return numba_cuda


def _complete_ufuncs():
    """numba-cuda lowers numpy's functions of a scalar from its own table, which lacks some that
    the CPU kernels call: add their double-precision loops (libdevice's correctly rounded ones,
    the same results as the CPU's)."""
    from numba.core import types
    from numba.cuda import libdevice, mathimpl, ufuncs
    from numba.cuda.np import npyfuncs

    table = ufuncs.ufunc_db()
    for ufunc, function in ((np.sqrt, libdevice.sqrt), (np.floor, libdevice.floor), (np.rint, libdevice.rint),
                            (np.cbrt, libdevice.cbrt), (np.absolute, libdevice.fabs)):
        table.setdefault(ufunc, {"d->d": mathimpl.get_lower_unary_impl(ufunc, types.float64, function)})
    table.setdefault(np.isfinite, {"d->?": npyfuncs.np_real_isfinite_impl})


def to_device(value):
    """``value`` with every array in it (named tuples and tuples are walked) on the device."""
    if isinstance(value, np.ndarray):
        return value.copy() if simulated() else cuda().to_device(np.ascontiguousarray(value))
    if isinstance(value, tuple):
        moved = [to_device(v) for v in value]
        return type(value)(*moved) if hasattr(value, "_fields") else tuple(moved)
    return value


def to_host(device, host=None):
    """The device arrays of ``device`` copied into the matching arrays of ``host`` (in place), or
    into new ones (``host`` None); returns the host value."""
    if isinstance(device, tuple):
        parts = [to_host(d, None if host is None else h) for d, h in zip(device, host or [None] * len(device))]
        return type(device)(*parts) if hasattr(device, "_fields") else tuple(parts)
    if isinstance(device, (int, float, bool, np.generic)) or device is None:
        return device
    if host is None:
        return np.array(device) if simulated() else device.copy_to_host()
    if simulated():
        host[...] = device
    else:
        device.copy_to_host(ary=host)
    return host
