"""The Textual app (kvtui SCENARIO): `kvtui.tui.app.make_app` builds it."""
