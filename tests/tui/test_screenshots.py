"""Every SVG in screenshots/ is made again and compared byte for byte with the committed file.

The app's pictures come from `screenshots/make.sh` (kvtui/tui/make_screenshots.py, the live one
from its kept recording, screenshots/10-live.rec); a chart is a docs block's (`svg` in
docs/generate.py), made and compared by the docs check. A change that alters a picture fails
here until the picture is made again and looked at; a picture no generator makes fails too.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from docs_support import generate

from kvtui.tui import make_screenshots

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = sorted(p.name for p in (ROOT / "screenshots").glob("*.svg"))


@pytest.fixture(scope="module")
def made() -> dict[str, str]:
    return {f"{name}.svg": svg for name, svg, _size in make_screenshots.make_all(str(ROOT / "scenarios/pressure.yaml"))}


def docs_charts() -> set[str]:
    """The screenshots/ files a generated docs block draws (`<!-- generated: svg PATH ... -->`)."""
    return {
        Path(b.spec.split()[1]).name
        for doc in generate.DOCS
        for b in generate.blocks_in(doc, doc.read_text())
        if b.spec.startswith("svg screenshots/")
    }


@pytest.mark.parametrize("name", SHIPPED)
def test_every_screenshot_is_what_its_generator_makes(name, made):
    if name in docs_charts():
        return  # docs/generate.py --check compares it (.ci/checks/docs.sh)
    assert name in made, f"screenshots/{name}: no generator makes it (screenshots/make.sh, a docs `svg` block)"
    committed = (ROOT / "screenshots" / name).read_text(encoding="utf-8")
    assert made[name] == committed, f"screenshots/{name} is not what the code draws: run screenshots/make.sh and look at it"


def test_every_picture_made_is_shipped(made):
    assert sorted(made) == sorted(set(SHIPPED) - docs_charts())
