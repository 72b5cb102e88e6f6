"""What arrives at the cluster: arrival processes and the synthetic workloads.

- `arrivals`: Poisson / Gamma / closed-loop processes with stepwise rate schedules.
- `tokens`: token ids and the incrementally hashed `Conversation`.
- `synthetic`: multi-turn sessions in prefix groups (`workload.groups`).
- `shared_prefix`: inference-perf's shared-prefix generator (`workload.shared_prefix`).
- `slo`: the SLO fields every workload puts on its requests.

Trace replay (`workload.trace`) lives in `kvtui.sim.traces` and uses the arrivals from here.
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
