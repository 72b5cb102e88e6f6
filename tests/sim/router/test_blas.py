"""predicted_latency's least squares runs on one BLAS thread, and only while it runs."""

from __future__ import annotations

import numpy as np
from threadpoolctl import threadpool_info

from kvtui.sim.router.blas import one_blas_thread


def blas_threads() -> set[int]:
    """numpy's own BLAS (another package may load one of its own later, which lstsq never calls)."""
    return {lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas" and "numpy" in lib["filepath"]}


def test_one_thread_inside_and_the_process_setting_back_after():
    np.linalg.lstsq(np.eye(3), np.ones(3), rcond=None)  # numpy's BLAS is loaded
    before = blas_threads()
    with one_blas_thread():
        assert blas_threads() == {1}
    assert blas_threads() == before
