"""Sweeps: the cartesian product of scenarios, grid values, policies and seeds, run on a local
process pool or a Ray cluster, streamed to JSON Lines in grid order, resumable, summarised.

A library with no Textual and no Rich: `kvtui.cli.sweep` and `kvtui.cli.plot` parse the command
line and print; everything they show is computed here.

- `grid`     expand the command line into `RunSpec`s, in grid order
- `run`      one run in a worker: the same run as `kvtui run`, as one canonical line
- `local`    the in-process and process-pool backends
- `raytasks` the Ray backend (Ray's task API: remote / wait / get; Ray's own retries)
- `output`   the grid-order results file, the journal beside it, resume, CSV
- `driver`   ties a backend to the output, in grid order
- `stats`    mean and Student-t confidence interval over seeds
- `summary`  one row per cell (scenario, grid values, policy) over its seeds
- `series`, `chart`, `svg`  what `kvtui plot` draws, in text and SVG
"""
