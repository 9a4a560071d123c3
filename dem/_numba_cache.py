"""numba's on-disk cache for `dem`: one folder per version of the source, shared by every copy.

numba invalidates a cached function only when *its own* file changes, but the compiled loop
inlines kernels from other modules, so an edit elsewhere would leave a stale kernel in use.
Caching under a folder named after a hash of all of `dem`'s sources makes that impossible:
any change selects a fresh folder (folders unused for a week are removed).

numba also files a function's cache under a hash of its source file's *absolute path*, so the
source tree, an installed copy and a copy in another folder compiled everything again (about two
minutes each). `PackageLocator` files `dem`'s functions by module name instead, so every copy
of the same source shares one cache. ``NUMBA_CACHE_DIR``, when set, is respected as the parent
folder.

Modules written from `dem`'s registries (`dem.engine`'s compiled loops, the normal laws'
dispatch of `dem.interactions.normal`) go to ``generated/`` in the same folder
(`generated_folder`) and are imported from there (`load_module`): their text follows from the
sources that key the folder (a loop that calls interactions from outside `dem` carries a stamp of
their sources, `dem.engine`).
"""

import hashlib
import importlib.util
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numba
from numba.core import caching

PACKAGE = Path(__file__).resolve().parent
#: folders of other source versions unused for this long are removed
KEEP_SECONDS = 7 * 86400
#: True when this process created the cache folder of this source version: nothing is compiled yet
FRESH = False


def source_hash():
    digest = hashlib.sha256()
    for path in sorted(PACKAGE.rglob("*.py")):
        digest.update(path.relative_to(PACKAGE).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


# numba ≥ 0.61 names its locators without a leading underscore
_USER_LOCATOR = getattr(caching, "UserProvidedCacheLocator", None) or getattr(caching, "_UserProvidedCacheLocator")
_CACHE_IMPL = getattr(caching, "CacheImpl", None) or getattr(caching, "_CacheImpl")


class PackageLocator(_USER_LOCATOR):
    """Caches a function of a `dem` module in ``CACHE_DIR/<module's package>`` (for example
    ``dem.interactions``), wherever the package lies; numba's source stamp (a hash of the
    file's content) still guards each entry."""

    def __init__(self, py_func, py_file):
        super().__init__(py_func, py_file)
        self._cache_path = os.path.join(numba.config.CACHE_DIR, py_func.__module__.rpartition(".")[0] or "dem")

    @classmethod
    def from_function(cls, py_func, py_file):
        if not numba.config.CACHE_DIR or not getattr(py_func, "__module__", "").startswith("dem."):
            return None
        return super().from_function(py_func, py_file)


def use_source_keyed_cache():
    parent = Path(os.environ.get("NUMBA_CACHE_DIR") or Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
                  / "dem-numba")
    global FRESH
    folder = parent / source_hash()
    FRESH = not folder.is_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return  # numba's default (next to the sources) then applies
    folder.touch()
    for stale in parent.iterdir():
        if stale.is_dir() and stale != folder and time.time() - stale.stat().st_mtime > KEEP_SECONDS:
            shutil.rmtree(stale, ignore_errors=True)
    numba.config.CACHE_DIR = str(folder)
    if PackageLocator not in _CACHE_IMPL._locator_classes:
        _CACHE_IMPL._locator_classes.insert(0, PackageLocator)


def generated_folder():
    """Where the generated modules go: beside numba's cache (keyed by the package's source), or a
    temporary folder when there is no cache folder."""
    if numba.config.CACHE_DIR:
        folder = Path(numba.config.CACHE_DIR) / "generated"
    else:
        folder = Path(tempfile.gettempdir()) / f"dem-generated-{os.getuid() if hasattr(os, 'getuid') else 0}"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def load_module(name, text):
    """Import the generated module ``name`` (writing it first if need be)."""
    path = generated_folder() / f"{name}.py"
    if not path.exists() or path.read_text(encoding="utf-8") != text:
        temporary = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        temporary.write_text(text, encoding="utf-8")
        os.replace(temporary, path)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # numba's cache re-imports the module by name
    spec.loader.exec_module(module)
    return module
