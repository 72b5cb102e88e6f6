"""A run as its consumers see it: the one door between the engine and its faces.

The app, `record`, `run`/`compare`, sweeps and benchmarks reach the engine only through this
package and the event and view types (kvtui/events.py, kvtui/views.py):

- `Run` (run.py): a run to step, play, seek, step back and command, with its journal, views,
  figures and narration, over a `Navigable` source (source.py); the simulation (drive.py) is
  one source, real engines live or recorded (live.py `LiveSource`, their deliveries translated
  into the same events by kvtui/live/translate.py) the other.
- `run_to_end` (headless.py): a run to its end with no screen, its result document
  (result.py) and progress as numbers (progress.py).
- narrate.py: every event in words, in one place.
"""

from kvtui.run.drive import FOLDABLE, Drive, digest
from kvtui.run.headless import Finished, run_to_end
from kvtui.run.lockstep import Lockstep
from kvtui.run.narrate import explain, life_lines, life_rows, request_of, summary
from kvtui.run.progress import Progress
from kvtui.run.result import RESULT_SCHEMA_VERSION, result_document
from kvtui.run.run import SEEK_KINDS, Run
from kvtui.run.source import Navigable, RunSource

__all__ = [
    "FOLDABLE", "Drive", "Finished", "Lockstep", "Navigable", "Progress", "RESULT_SCHEMA_VERSION", "Run",
    "RunSource", "SEEK_KINDS", "digest", "explain", "life_lines", "life_rows", "request_of", "result_document",
    "run_to_end", "summary",
]
