from hypothesis import settings

# The first call of a numba function compiles it; hypothesis' per-example deadline would count it.
settings.register_profile("dem", deadline=None, max_examples=200, derandomize=True)
settings.load_profile("dem")
