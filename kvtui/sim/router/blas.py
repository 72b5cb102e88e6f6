"""One BLAS thread for the predictor's least squares, for the length of the call only.

numpy's OpenBLAS starts as many threads as there are cores. `np.linalg.lstsq` on the
predictor's few thousand rows by a dozen columns is far too small for a second thread to help:
measured on the project's 2-core machine (issue 36), OpenBLAS spinning its second thread took
about half of predicted_latency's CPU time (workload-c-small at 15 req/s: 13.2 s of CPU with
two threads, 9.2 s with one; the same event stream). In a sweep each worker already has a core
of its own, so the second thread only steals from the other worker.

The limit is scoped (threadpoolctl's `ThreadpoolController.limit`, about 8 us a call): the
process's BLAS goes back to its own setting when the fit returns, so numpy in a user's code, a
notebook or the tests around the engine is not changed. The environment variable
(`OPENBLAS_NUM_THREADS=1`) cannot do this: it is read once, when numpy loads, and `kvtui`'s own
command line has loaded numpy before it parses its arguments.
"""

from __future__ import annotations

from contextlib import AbstractContextManager

_controller = None


def one_blas_thread() -> AbstractContextManager:
    """A context in which the BLAS libraries loaded in this process use one thread."""
    global _controller
    if _controller is None:  # after numpy has loaded its BLAS (the caller uses numpy)
        from threadpoolctl import ThreadpoolController

        _controller = ThreadpoolController()
    return _controller.limit(limits=1, user_api="blas")
