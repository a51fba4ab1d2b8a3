"""Evaluation of Strategic Reserve agents: round-robin tournaments and the versioned benchmark.

- `strategic_reserve_env.evaluation.tournament`: paired-dice round robins (`evaluate.py AGENT AGENT ...`);
- `strategic_reserve_env.evaluation.benchmark_protocol`: one agent against a fixed panel under a versioned protocol
  (`evaluate.py --benchmark SPEC`), with score cards;
- `strategic_reserve_env.evaluation.statistics`: score intervals and Bradley-Terry ratings;
- `strategic_reserve_env.evaluation.reference_cards`: the reference score cards of docs/BENCHMARK.md.

Evaluation imports the agents (`agents`), never the reverse.
"""
