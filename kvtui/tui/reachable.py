"""Which jumps can still find something, known before seeking.

Node failures and control-plane crashes come only from the scenario's scripted `events` and
from the user's own keys (`d`, `c`), which act at once (kvtui/sim/engine.py `_scripted`); a
crash and its recovery need a `metadata` section. So a jump to one of them that no scripted
event can reach says why at once, instead of running the rest of the run to find nothing. KV
transfers happen only under a prefill/decode policy, so a jump to one under any other says so.
"""

from __future__ import annotations

from kvtui.scenario.policies import PAIRED_POLICIES, POLICIES

NO_STORE = ("This scenario has no metadata: section: its control plane keeps no log, so it never "
            "crashes or recovers (try scenarios/crash-recovery.yaml).")

NOT_REPLICATED = ("This scenario's control plane is one store, not a Raft group: it holds no elections "
                  "(metadata.replication.members: 3 makes one; try scenarios/control-plane-patterns.yaml).")


# What real engines' events can tell (kvtui/live/translate.py): no rejections, preemptions,
# failures, control plane or KV transfers reach kvtui from them.
REAL_ENGINES_TELL = ("eviction", "decision", "arrival", "completion", "gap")


def why_unreachable(runner, what: str) -> str | None:
    """Why a jump to the next `what` cannot find one from here; None when it may."""
    if runner.scenario is None:
        if what not in REAL_ENGINES_TELL:
            return (f"Real engines do not publish a {what}: their KV events and route mode's requests tell "
                    f"{', '.join(REAL_ENGINES_TELL)}.")
        return None
    match what:
        case "gap":
            return "A simulation loses no KV events: gaps come from real engines (kvtui live, kvtui replay)."
        case "crash" | "recovery" if not runner.has_store:
            return NO_STORE
        case "crash" if not _scripted_after(runner, "control_plane_crash"):
            return "No control-plane crash is scripted after now (c crashes it by hand)."
        case "recovery" if not runner.control_plane_down and not _scripted_after(runner, "control_plane_crash"):
            return "The control plane is up and no crash is scripted after now (c crashes it by hand)."
        case "election" if runner.control_plane_view() is None:
            return NOT_REPLICATED
        case "failure" if not _scripted_after(runner, "node_down"):
            return "No node failure is scripted after now (d takes the selected node down)."
        case "transfer" if not POLICIES[runner.policy].paired:
            return (f"{runner.policy} serves every request where it is routed: no KV moves "
                    f"(a prefill/decode policy moves it: {', '.join(PAIRED_POLICIES)}).")
    return None


def _scripted_after(runner, action: str) -> bool:
    """A scripted event of `action` still to fire."""
    return any(ev.action == action and _pending(runner, ev) for ev in runner.scripted)


def _pending(runner, ev) -> bool:
    """Later than now; or at this very instant and not fired yet (its node still up, the
    control plane not down: a recovery takes at least a quarter of a second)."""
    if ev.at != runner.now:
        return ev.at > runner.now
    if ev.action == "node_down":
        return runner.node_is_up(ev.node)
    return not runner.control_plane_down
