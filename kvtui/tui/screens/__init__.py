"""Screens: the help screen (?) and a zoomed node (z)."""
