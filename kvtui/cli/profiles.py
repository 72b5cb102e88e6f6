"""`kvtui profiles [SCENARIO]`: the hardware and model profiles with their key figures and sources."""

from __future__ import annotations

from kvtui.cli.common import Parser


def main(argv: list[str]) -> int:
    """`kvtui profiles [SCENARIO]`: the hardware and model profiles, with their sources."""
    from kvtui.profiles import GB, catalog

    p = Parser(prog="kvtui profiles", description="List hardware and model profiles (shipped, plus a scenario's own).")
    p.add_argument("scenario", nargs="?", help="also list the profiles this scenario defines")
    args = p.parse_args(argv)
    hardware, models = catalog()
    if args.scenario:
        from kvtui.scenario import load_scenario

        s = load_scenario(args.scenario)
        hardware, models = catalog(s.hardware, s.models)
    print("hardware    memory  BF16 TFLOPS  HBM TB/s  interconnect            efficiency (compute/memory)")
    for hw in hardware.values():
        link = f"{hw.interconnect} {hw.link_bytes_per_s / GB:g} GB/s" if hw.link_bytes_per_s else hw.interconnect
        print(f"{hw.name:<11} {hw.memory_bytes / GB:>4g} GB  {hw.peak_flops / 1e12:>11g}  {hw.hbm_bytes_per_s / 1e12:>8g}"
              f"  {link:<22}  {hw.compute_efficiency:g}/{hw.memory_efficiency:g}")
        print(f"            source: {hw.source}")
    print("\nmodel          params  layers  KV heads  KV bytes/token (bf16)")
    for m in models.values():
        print(f"{m.name:<14} {m.params / 1e9:>5g}B  {m.layers:>6}  {m.kv_heads:>8}  {m.kv_bytes_per_token:>10,} ({m.kv_bytes_per_token / 1024:g} KiB)")
        print(f"               source: {m.source}")
    return 0
