"""The help screen's text wraps beside its names, never back under them (at 80 columns a
key's help and a panel's description wrapped to the left edge)."""

from rich.console import Console

from kvtui.tui.app import KvtuiApp
from kvtui.tui.screens.help import panel_rows, two_columns


def _lines(rows, indent: int, width: int) -> list[str]:
    console = Console(width=width, record=True)
    console.print(two_columns(rows, indent))
    return console.export_text().splitlines()


def test_key_help_wraps_beside_the_keys():
    rows = KvtuiApp.HELP_ROWS
    column = 2 + max(len(k) for k, _ in rows) + 2
    lines = _lines(rows, 2, 76)  # the help box's text width at 80x24
    assert len(lines) > len(rows)  # some help does wrap at this width
    for line in lines:
        assert line.startswith("  ") and (line[2] != " " or line[:column].strip() == "")


def test_panel_descriptions_wrap_beside_their_names():
    rows = panel_rows()
    column = max(len(k) for k, _ in rows) + 2
    names = {name for name, _ in rows}
    for line in _lines(rows, 0, 76):
        head = line[:column].strip()
        assert head == "" or head in names
        assert line[column:].strip()


def test_help_at_80x24_keeps_wrapped_lines_off_the_key_column(make):
    """What `?` shows at 80x24: under "Controls", every row is indented (a key, or the
    continuation of its help), none starts at the box's edge ("│ checkpoint)" did)."""
    import asyncio
    import io

    async def rows() -> list[str]:
        app = make()
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.press("question_mark")
            await pilot.pause()
            console = Console(width=80, height=24, file=io.StringIO(), record=True)
            console.print(app.screen._compositor.render_update(full=True, screen_stack=app._background_screens))
            return console.export_text(styles=False).splitlines()

    lines = asyncio.run(rows())
    start = next(i for i, line in enumerate(lines) if "Controls" in line) + 1
    inside = [line[2:-2] for line in lines[start:] if line.startswith("│ ")]
    assert len(inside) > 10
    assert all(row.startswith("  ") for row in inside), inside
