"""What arrives at the cluster: arrival processes and the synthetic workloads.

- `arrivals`: Poisson / Gamma / closed-loop processes with stepwise rate schedules.
- `tokens`: token ids and the incrementally hashed `Conversation`.
- `synthetic`: multi-turn sessions in prefix groups (`workload.groups`).
- `shared_prefix`: inference-perf's shared-prefix generator (`workload.shared_prefix`).
- `slo`: the SLO fields every workload puts on its requests.
- `hashing`: chained block keys (vLLM's prefix caching) and the one copy of the splitmix64 mix.
- Trace replay (`workload.trace`): `trace` (the workload), `reader` (what the readers share),
  `mooncake`, `azure`, `weka` (one streamed reader per format), `trace_keys` (hash ids to
  block keys), `trace_stats` (`kvtui trace stats`: what hit rate a trace allows).
"""

from kvtui.sim.workload.arrivals import IDLE_RETRY_S, Submit, rate_at, start_arrivals
from kvtui.sim.workload.shared_prefix import SharedPrefixWorkload
from kvtui.sim.workload.slo import slo_fields
from kvtui.sim.workload.synthetic import SyntheticWorkload
from kvtui.sim.workload.tokens import TOKEN_ID_RANGE, Conversation, random_tokens

__all__ = [
    "IDLE_RETRY_S",
    "TOKEN_ID_RANGE",
    "Conversation",
    "SharedPrefixWorkload",
    "Submit",
    "SyntheticWorkload",
    "random_tokens",
    "rate_at",
    "slo_fields",
    "start_arrivals",
]
