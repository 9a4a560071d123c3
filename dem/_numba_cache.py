"""Numba's on-disk cache, keyed by the package's source.

Numba invalidates a cached function only when *its own* file changes, but the compiled loop
inlines kernels from other modules, so an edit elsewhere would leave a stale kernel in use.
Caching under a folder named after a hash of all of `dem`'s sources makes that impossible:
any change selects a fresh folder (folders unused for a day are removed). ``NUMBA_CACHE_DIR``,
when set, is respected as the parent folder.
"""

import hashlib
import os
import shutil
import time
from pathlib import Path

import numba

PACKAGE = Path(__file__).resolve().parent


def source_hash():
    digest = hashlib.sha256()
    for path in sorted(PACKAGE.rglob("*.py")):
        digest.update(str(path.relative_to(PACKAGE)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def use_source_keyed_cache():
    parent = Path(os.environ.get("NUMBA_CACHE_DIR") or Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
                  / "dem-numba")
    folder = parent / source_hash()
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return  # numba's default (next to the sources) then applies
    folder.touch()
    for stale in parent.iterdir():
        if stale.is_dir() and stale != folder and time.time() - stale.stat().st_mtime > 86400:
            shutil.rmtree(stale, ignore_errors=True)
    numba.config.CACHE_DIR = str(folder)
