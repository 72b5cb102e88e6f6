"""The simulation engine. A library: no Textual, no Rich, no wall-clock time."""
