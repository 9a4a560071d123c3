"""Runs of one set-up on numba's threads: serial, parallel on one thread and on two."""

import numba

#: ``(parallel, threads)`` of the runs that must give the same bits
THREAD_CASES = ((False, 1), (True, 1), (True, 2))


def across_threads(run):
    """``[run(parallel) for each of THREAD_CASES]``, each with numba's thread count set (and put
    back after)."""
    results = []
    for parallel, threads in THREAD_CASES:
        previous = numba.get_num_threads()
        numba.set_num_threads(threads)
        try:
            results.append(run(parallel))
        finally:
            numba.set_num_threads(previous)
    return results
