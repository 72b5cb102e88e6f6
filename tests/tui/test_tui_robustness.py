"""The app survives small terminals, resizes and a few hundred random key presses."""

from __future__ import annotations

import asyncio
import random

from textual import events

KEYS = [
    "space", "s", "e", "r", "p", "f", "plus", "minus", "left_square_bracket", "right_square_bracket",
    "d", "z", "R", "o", "c", "t", "v", "question_mark", "escape", "up", "down", "pageup", "pagedown",
    "home", "end", "enter", "tab",
]  # everything but quit (q) and the palette (ctrl+p, a modal with its own input)


def test_tiny_terminal(make):
    async def go():
        app = make()
        async with app.run_test(size=(40, 12)) as pilot:
            await pilot.press("s", "e", "v", "v", "v", "v")
            await pilot.press("z")
            await pilot.pause()
            await pilot.press("escape", "question_mark")
            await pilot.pause()
            await pilot.press("escape", "f", "t")
            await pilot.pause()
            assert app.is_running
            app.export_screenshot()

    asyncio.run(go())


def test_resize_back_and_forth(make):
    async def go():
        app = make()
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.press("e")
            for size in [(200, 60), (40, 12), (120, 30), (20, 6), (160, 50), (80, 24)]:
                await pilot.resize_terminal(*size)
                await pilot.press("s")
                await pilot.pause()
                assert app.has_class("-wide") == (size[0] >= 120)
                app.export_screenshot()

    asyncio.run(go())


def test_random_keys_paused_mode(make):
    """300 seeded random presses, no frame timer (every jump runs to completion)."""

    async def go():
        rng = random.Random(20240607)
        app = make()
        async with app.run_test(size=(80, 24)) as pilot:
            for i in range(300):
                key = rng.choice(KEYS)
                app._driver.send_message(events.Key(key, key if len(key) == 1 else None))
                await asyncio.sleep(0)
                if i % 25 == 0:
                    await pilot._wait_for_screen()
            await pilot.pause()
            assert app.is_running
            app.export_screenshot()

    asyncio.run(go())


def test_random_keys_while_playing(make):
    """Keys arriving as fast as a terminal sends them while the frame timer plays."""

    async def go():
        rng = random.Random(7)
        app = make(fps=30)
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.press("space", "plus", "plus", "plus")
            for _ in range(200):
                key = rng.choice(KEYS)
                app._driver.send_message(events.Key(key, key if len(key) == 1 else None))
                await asyncio.sleep(0.002)
            await asyncio.sleep(0.2)
            assert app.is_running
            app.export_screenshot()

    asyncio.run(go())
