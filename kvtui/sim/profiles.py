"""Moved to `kvtui.profiles` (data files + dataclasses, importable without the engine).

Kept as a re-export so older imports keep working; new code imports `kvtui.profiles`.
"""

from kvtui.profiles import (  # noqa: F401
    GB,
    HARDWARE,
    MODELS,
    GiB,
    Hardware,
    Model,
    derived_kv_blocks,
    memory_fit,
)
