"""docs/generate.py, loaded as a module (it is a script, not part of the package): the docs
check (tests/test_docs.py) and the screenshot check (tests/tui/test_screenshots.py) read it."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _load_generate():
    spec = importlib.util.spec_from_file_location("kvtui_docs_generate", ROOT / "docs" / "generate.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve their module by name
    spec.loader.exec_module(module)
    return module


generate = sys.modules.get("kvtui_docs_generate") or _load_generate()
