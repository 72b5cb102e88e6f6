"""`kvtui calibrate`: fit the latency model's few physical knobs to a real benchmark, and say how
well the result predicts a load it was not fitted on.

One concept per module:
- report.py: what a benchmark report says, whatever tool wrote it (stages, measures, settings);
- detect.py: which tool wrote a path, by its content; inference_perf.py, vllm_bench.py,
  guidellm.py, recording.py: one reader each; hf_config.py: a Hugging Face config.json as a model;
- rebuild.py: the report's workload and serving settings as a kvtui scenario, one per stage;
- simulate.py: one engine run of a stage, measured as the tool measured it;
- knobs.py: the physical knobs, their bounds and where each sits in a profile;
- fit.py: the bounded least-squares fit (numpy only);
- accuracy.py: real vs simulated per stage and metric, the naive baseline, per-request errors;
- overlay.py: the fitted profile as a file scenarios load (`profiles:`);
- render.py: the text report and the `--json` document.
"""

from kvtui.calibrate.calibration import Calibration, calibrate

__all__ = ["Calibration", "calibrate"]
