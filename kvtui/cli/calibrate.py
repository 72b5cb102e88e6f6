"""`kvtui calibrate REPORT`: fit the latency model's physical knobs to a real benchmark (an
inference-perf results directory, `vllm bench serve --save-result` JSON, a GuideLLM benchmarks
JSON, a `kvtui live --record` directory made in route mode) and report how well the fitted model
predicts the stages it was not fitted on (kvtui/calibrate/)."""

from __future__ import annotations

from kvtui.cli.common import Parser, write_json
from kvtui.files import check_output, write_output


def main(argv: list[str]) -> int:
    from kvtui.calibrate.calibration import calibrate
    from kvtui.calibrate.detect import read_report
    from kvtui.calibrate.overlay import overlay_text
    from kvtui.calibrate.rebuild import base_scenario
    from kvtui.calibrate.render import document, text

    p = Parser(prog="kvtui calibrate", description="Fit the latency model to a real benchmark and report its accuracy "
               "on the stages it was not fitted on.")
    p.add_argument("report", metavar="REPORT", help="inference-perf results dir, vllm bench JSON (or a dir of them), "
                   "GuideLLM JSON, or a kvtui live recording dir; a config.json beside it describes the model")
    p.add_argument("--fit-stage", metavar="K", type=int, action="append", help="fit on this stage (repeatable; default the first)")
    p.add_argument("--scenario", metavar="S", help="what the report lacks (hardware, block size, seed): a scenario file")
    p.add_argument("--set", metavar="KEY=VALUE", action="append", default=[], dest="sets",
                   help="override a key of the base scenario (e.g. cluster.hardware=a100-80gb)")
    p.add_argument("--out", metavar="PROFILE.yaml", help="write the fitted profile here (load it with profiles: [FILE])")
    p.add_argument("--json", metavar="FILE", help="write the accuracy document here")
    args = p.parse_args(argv)
    for path, what in ((args.out, "profile"), (args.json, "accuracy document")):
        if path:
            check_output(path, [args.report], what)
    report = read_report(args.report)
    base = base_scenario(args.scenario, args.sets)
    model_given = args.scenario is not None or any(s.split("=", 1)[0].strip() == "model" for s in args.sets)
    cal = calibrate(report, base, model_given, args.fit_stage)
    print(text(cal))
    if args.json:
        write_json(args.json, document(cal))
    if args.out:
        write_output(args.out, overlay_text(cal), "the profile")
    return 0
