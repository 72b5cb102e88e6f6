"""kvtui's build backend: setuptools' own, asking for mypyc only when KVTUI_COMPILE=1 (issue 23).

`pip install [-e] .` builds pure Python and needs no compiler nor mypy. With KVTUI_COMPILE=1
the build environment also gets mypy (which carries mypyc), pinned as the test extra pins it,
and setup.py compiles the engine's hot modules; if that fails it says so in one line and the
install goes on in pure Python.
"""

from __future__ import annotations

import os

from setuptools import build_meta
from setuptools.build_meta import *  # noqa: F403 - every hook setuptools offers, unchanged

# numpy too: its type stubs are what the engine's annotations name (without them mypyc reads Any)
MYPYC = ["mypy==2.4.1", "numpy>=2,<3"]


def compiling() -> bool:
    return os.environ.get("KVTUI_COMPILE") == "1"


def get_requires_for_build_wheel(config_settings=None):
    return build_meta.get_requires_for_build_wheel(config_settings) + (MYPYC if compiling() else [])


def get_requires_for_build_editable(config_settings=None):
    return build_meta.get_requires_for_build_editable(config_settings) + (MYPYC if compiling() else [])
