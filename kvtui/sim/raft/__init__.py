"""The metadata store as a Raft group: a deterministic model of Raft on the engine's loop.

Like the block pool is a model of vLLM's, this is a model of Raft as etcd runs it, one rule per
place, each citing the Raft paper (Ongaro & Ousterhout, "In Search of an Understandable
Consensus Algorithm", USENIX ATC 2014: §5.1-§5.4, §8), Ongaro's thesis (Stanford 2014: §6.2
check-quorum, §6.4 read-only queries, §9.6 PreVote) and etcd's raft package
(etcd-io/raft, raft.go and log.go, v3.6.0; the same rules as etcd 3.4's vendored raft/):

- log.py       the replicated log: up-to-date rule, consistency check, conflict truncation
- messages.py  RequestVote / AppendEntries and their replies
- member.py    one member's state and rules (follower / pre-candidate / candidate / leader)
- network.py   links between members: latency, partitions, members down
- group.py     the members on the engine's loop: timers, delivery, fsync, commit and apply
- invariants.py  election safety, log matching, leader completeness, state-machine safety

Nothing here reads a wall clock; election timeouts come from a child of the run's SeedSequence.
"""
