"""A versioned benchmark protocol: any agent against a fixed panel, with a score card.

`strategic-reserve benchmark SPEC` plays the agent SPEC against each
member of the panel of `PROTOCOL_V2` (the default; `--protocol 1` for
`PROTOCOL_V1`): random, greedy, expectimax:depth=2 and the frozen PPO
baseline, with everything else fixed by the
protocol: games per opponent, paired dice from a fixed seed, reserve 7,
the ply limit and the engine batch (the agents' generators are consumed
batch by batch, so the batch is part of what makes a run reproducible).
The score card gives the score against each opponent with its 95 %
interval, a Bradley-Terry rating on the protocol's fixed scale (the panel's
ratings are constants of the protocol, random at 0; only the agent's rating
is fitted), the games per second and the protocol version. Any change to
what the protocol fixes, the panel's agents included, makes a new version;
scores are comparable only within one version. docs/BENCHMARK.md describes
the protocol, the JSON schema of a score card and the reference scores.

Protocol v2 is v1's panel and rules scored luck-adjusted (`strategic_reserve_env.core.luck`, value function
`race`): the scores, their intervals and the rating come from the luck-adjusted results, which have the
raw results' expectation and about a tenth of their variance, so fewer games give intervals of at most
0.005. v1 scores raw results.
"""

from __future__ import annotations

import os
import platform
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import cast

import numpy as np

from strategic_reserve_env import __version__, models
from strategic_reserve_env.agents import as_agent, load_agent
from strategic_reserve_env.agents.luck_values import RACE, load_luck_value
from strategic_reserve_env.core.policies import NamedPolicy
from strategic_reserve_env.files.outputs import write_text
from strategic_reserve_env.files.progress import Progress

from .statistics import fit_ratings
from .tournament import (
    UNFINISHED,
    Pairing,
    PairingError,
    Settings,
    check_agent,
    duel_of,
    json_text,
    markdown_table,
    play_pairing,
    result_cells,
    speed_cell,
    text_table,
)

SHIPPED_PPO = "ppo"
"""The spec of the shipped PPO model (what `make train` makes; it changes when a better one ships)."""
PANEL_PPO = "ppo:" + models.path(models.PANEL_V1_POLICY).as_posix()
"""The spec of protocol v1's PPO panel member: the model shipped when v1 was fixed, frozen in its own
file so that replacing the shipped model leaves the protocol's panel, and so its ratings, unchanged."""
SCHEMA = "strategic-reserve-benchmark/2"  # the JSON layout of a score card (docs/BENCHMARK.md)


@dataclass(frozen=True)
class PanelMember:
    """An opponent of the panel."""

    label: str
    """Its name on score cards (the same on every machine, unlike a model's path)."""
    spec: str
    """Its agent spec."""
    games: int
    """Games the benchmarked agent plays against it (even: each dice stream twice, seats swapped)."""
    rating: float
    """Its Bradley-Terry rating under the protocol (Elo scale, random at 0): fixed, it sets the scale."""


@dataclass(frozen=True)
class Protocol:
    """Everything a benchmark run fixes."""

    version: str
    panel: tuple[PanelMember, ...]
    seed: int
    """Seed of the dice streams and of the agents' generators."""
    reserve: int
    ply_limit: int
    batch: int
    """Games per engine batch."""
    adjusted: bool = False
    """Scored luck-adjusted (v2): the card's scores, intervals and rating come from the adjusted results."""
    luck_value: str = RACE
    """The value function of the luck terms (the adjusted scores are reported under every protocol)."""

    def config(self):
        """The game settings."""
        return self.settings(2).config()

    def settings(self, games: int) -> Settings:
        """Tournament settings of one opponent's games."""
        return Settings(
            agents=[],
            games=games,
            seed=self.seed,
            batch=self.batch,
            reserve=self.reserve,
            ply_limit=self.ply_limit,
            progress=False,
            luck_value=self.luck_value,
        )

    def as_json(self, panel_names: list[str] | None = None) -> dict:
        """The protocol; `panel_names` (the loaded agents' canonical names) replace the specs if given."""
        names = panel_names or [m.spec for m in self.panel]
        return {
            "version": self.version,
            "seed": self.seed,
            "reserve": self.reserve,
            "ply_limit": self.ply_limit,
            "batch": self.batch,
            "scoring": self.scoring,
            "luck_value": self.luck_value,
            "panel": [
                {"label": m.label, "agent": name, "games": m.games, "rating": m.rating}
                for m, name in zip(self.panel, names, strict=True)
            ],
        }

    @property
    def scoring(self) -> str:
        """`luck-adjusted` or `raw`: which results the card's scores and rating come from."""
        return "luck-adjusted" if self.adjusted else "raw"

    def summary(self, games_override: int | None = None) -> str:
        """One line: what the protocol fixes, with the games played per opponent (`games_override` if given,
        the protocol's own in parentheses then)."""
        games = ", ".join(f"{m.games:,} vs {m.label}" for m in self.panel)
        if games_override is not None:
            games = f"{games_override:,} vs each (the protocol's: {games})"
        return (
            f"protocol {self.version}: paired dice (seed {self.seed}), reserve {self.reserve}, "
            f"ply limit {self.ply_limit}, batch {self.batch}, scored {self.scoring} (luck value {self.luck_value}); "
            f"games: {games}"
        )


# Games per opponent: expectimax:depth=2 plays about 150 games/s against fast agents on one core, the
# others thousands; 2,000 games against it and 4,000 against the rest keep a benchmark of the shipped
# PPO at 18 s of wall time on the project's 2-core machine (44 s when it is busy, load average 7), with
# 95 % half-widths of 0.013 and 0.019 on the scores (docs/BENCHMARK.md, "Budget").
# The ratings are those of the panel's round robin under this protocol
# (strategic-reserve reference).
PROTOCOL_V1 = Protocol(
    version="v1",
    panel=(
        PanelMember("random", "random", 4000, 0.0),
        PanelMember("greedy", "greedy", 4000, 171.2),
        PanelMember("expectimax:depth=2", "expectimax:depth=2", 2000, 189.4),
        PanelMember("ppo_baseline", PANEL_PPO, 4000, 159.2),
    ),
    seed=1,
    reserve=7,  # fixed by protocol v1 (today's DEFAULT_RESERVE and DEFAULT_PLY_LIMIT, which may change; v1 may not)
    ply_limit=1000,
    batch=1000,
)

# Protocol v2: v1's panel, seed, reserve and ply limit, scored luck-adjusted (value function race). Games per
# opponent, from the adjusted per-pair standard deviations measured for the shipped PPO (docs/BENCHMARK.md,
# "Budget (v2)"): sd 0.19 against random (the random player's own choices are noise no luck term removes:
# variance ratio 2.5), 0.076 against greedy, 0.075 against expectimax:depth=2 and 0.097 against the PPO
# baseline (ratios 10 to 17); a 95 % half-width of 1.96 sd / sqrt(pairs) <= 0.005 then needs about 11,100,
# 1,770, 1,730 and 2,890 games, rounded up. The batch is 2,000: the fast pairings run about 20 % faster
# than at 1,000.
# The ratings are those of the panel's round robin under this protocol, fitted on the adjusted scores
# (strategic-reserve reference).
PROTOCOL_V2 = Protocol(
    version="v2",
    panel=(
        PanelMember("random", "random", 12000, 0.0),
        PanelMember("greedy", "greedy", 2000, 180.2),
        PanelMember("expectimax:depth=2", "expectimax:depth=2", 1800, 194.6),
        PanelMember("ppo_baseline", PANEL_PPO, 3200, 162.8),
    ),
    seed=1,
    reserve=7,
    ply_limit=1000,
    batch=2000,
    adjusted=True,
    luck_value=RACE,
)
PROTOCOLS = {"1": PROTOCOL_V1, "2": PROTOCOL_V2}
"""The protocols by number (`evaluate.py --benchmark SPEC --protocol N`)."""
DEFAULT_PROTOCOL = PROTOCOL_V2


CARD_HEADER = [
    "opponent",
    "games",
    "score",
    "95% CI",
    "adjusted",
    "95% CI adj",
    "var ratio",
    "win as Red",
    "win as Blue",
    "mean plies",
    "truncated",
    "games/s",
]


@dataclass
class ScoreCard:
    """The result of benchmarking one agent."""

    agent: str
    """The agent's canonical name."""
    protocol: Protocol
    games_override: int | None
    """Games per opponent when overridden (the run is then not protocol-conformant)."""
    panel_names: list[str]
    """Canonical names of the panel's agents as loaded (a model's path as seen from the working directory)."""
    results: list[tuple[PanelMember, Pairing]] = field(default_factory=list)
    rating: tuple[float, float] | None = None
    """(Elo, 95 % half-width) on the protocol's scale; None until every opponent is played."""
    error: str | None = None
    wall_seconds: float = 0.0
    """Wall time of the whole run: loading and checking the agents, and the games."""
    load_average: float | None = None
    """The machine's 1-minute load average at the end of the run (None where the system has none):
    speeds on a shared machine mean little without it."""

    @property
    def conformant(self) -> bool:
        return self.games_override is None

    @property
    def complete(self) -> bool:
        return self.rating is not None and self.error is None

    @property
    def unfinished(self) -> str | None:
        """What keeps the card from being complete: its error, or `UNFINISHED` while the run
        goes on; None when complete."""
        return None if self.complete else self.error or UNFINISHED

    @property
    def games(self) -> int:
        return sum(p.games for _, p in self.results)

    @property
    def seconds(self) -> float:
        return sum(p.seconds for _, p in self.results)

    def title(self) -> str:
        if self.conformant:
            return f"Strategic Reserve benchmark, protocol {self.protocol.version}: {self.agent}"
        return (
            f"Strategic Reserve benchmark, NOT protocol {self.protocol.version} ({self.games_override} games per "
            f"opponent; not comparable with protocol scores): {self.agent}"
        )

    def rows(self) -> list[list[str]]:
        """Table rows (`CARD_HEADER`): one per opponent played."""
        return [[member.label, f"{p.games:,}", *result_cells(p), speed_cell(p)] for member, p in self.results]

    def rating_line(self) -> str:
        anchors = ", ".join(f"{m.label} {m.rating:+z.0f}" for m in self.protocol.panel)
        value = "n/a (unfinished)" if self.rating is None else f"{self.rating[0]:+z.0f} ± {self.rating[1]:.0f}"
        return (
            f"rating: {value} (Bradley-Terry on the {self.protocol.scoring} scores, Elo scale; "
            f"the panel fixed at {anchors})"
        )

    def speed_line(self) -> str:
        """The games played and their speed; on a card stopped early, those of the opponents finished only
        (the games against the opponent under way are not scored, so not counted)."""
        load = f", load average {self.load_average:.1f}" if self.load_average is not None else ""
        wall = f"wall time {self.wall_seconds:.1f} s with loading and checks{load}"
        if not self.results:
            return f"no opponent finished: the games of the one under way are not scored; {wall}"
        rate = self.games / self.seconds if self.seconds else 0.0
        finished = " against the opponents finished" if self.unfinished else ""
        return f"{self.games:,} games{finished} in {self.seconds:.1f} s: {rate:,.0f} games/s; {wall}"

    def text(self) -> str:
        lines = [
            self.title(),
            "",
            text_table(CARD_HEADER, self.rows()),
            "",
            self.rating_line(),
            self.speed_line(),
            self.protocol.summary(self.games_override),
        ]
        return "\n".join(lines + ([f"unfinished: {self.error}"] if self.error else []))

    def markdown(self) -> str:
        lines = [
            f"# {self.title()}",
            "",
            markdown_table(CARD_HEADER, self.rows()),
            "",
            f"- {self.rating_line()}",
            f"- {self.speed_line()}",
            f"- {self.protocol.summary()}",
        ]
        return "\n".join(lines + ([f"- **unfinished**: {self.unfinished}"] if self.unfinished else [])) + "\n"

    def as_json(self) -> dict:
        """The score card in the layout `SCHEMA` (docs/BENCHMARK.md)."""
        return {
            "schema": SCHEMA,
            "package_version": __version__,
            "agent": self.agent,
            "protocol": self.protocol.as_json(self.panel_names),
            "conformant": self.conformant,
            "games_per_opponent_override": self.games_override,
            "complete": self.complete,
            "error": self.unfinished,
            "opponents": [{"label": member.label, **pairing.as_json()} for member, pairing in self.results],
            "rating": None if self.rating is None else {"elo": self.rating[0], "ci95_half_width": self.rating[1]},
            "games": self.games,
            "seconds": self.seconds,
            "games_per_second": self.games / self.seconds if self.seconds else None,
            "wall_seconds": self.wall_seconds,
            "environment": {
                "python": platform.python_version(),
                "numpy": np.__version__,
                "machine": platform.machine(),
                "cpus": os.cpu_count(),
                "load_average": self.load_average,
            },
        }

    def write(self, directory: Path, stem: str = "benchmark") -> None:
        """`{stem}.json` and `{stem}.md` in `directory` (created if missing)."""
        directory.mkdir(parents=True, exist_ok=True)
        write_text(directory / f"{stem}.json", json_text(self.as_json()))
        write_text(directory / f"{stem}.md", self.markdown())


def fit_rating(protocol: Protocol, results: list[tuple[PanelMember, Pairing]]) -> tuple[float, float]:
    """The benchmarked agent's rating and 95 % half-width with the panel's ratings held fixed, from the
    adjusted scores under a luck-adjusted protocol, from the raw ones otherwise."""
    duels = [duel_of(pairing, 0, k + 1, protocol.adjusted) for k, (_, pairing) in enumerate(results)]
    fixed = {k + 1: member.rating for k, (member, _) in enumerate(results)}
    ratings, half = fit_ratings(len(results) + 1, duels, fixed)
    return float(ratings[0]), float(half[0])


def run_benchmark(
    spec,
    protocol: Protocol = DEFAULT_PROTOCOL,
    games: int | None = None,
    progress: bool = True,
    on_opponent: Callable[[ScoreCard], None] | None = None,
    on_start: Callable[[ScoreCard], None] | None = None,
) -> ScoreCard:
    """Benchmark the agent `spec` (a spec string or an agent object) under `protocol`; `games` overrides
    the games per opponent (the card is then marked not conformant). The agent and the panel are loaded and
    checked before the first game (`ValueError`). `on_start(card)` is called with the empty card before the
    first game, `on_opponent(card)` after each opponent.
    `PairingError` if an agent fails; its `card` holds what was played."""
    start = time.perf_counter()
    if games is not None:
        Settings(agents=[], games=games)  # checks the override
    agent = cast(NamedPolicy, as_agent(spec))
    panel = [load_agent(member.spec) for member in protocol.panel]
    config = protocol.config()
    luck = load_luck_value(protocol.luck_value)
    for each in (agent, *panel):
        check_agent(each, config, protocol.seed)
    card = ScoreCard(agent.name, protocol, games, [each.name for each in panel])
    total = sum(games or member.games for member in protocol.panel)
    if on_start is not None:
        on_start(card)
    # no time left shown: the opponents' speeds differ by orders of magnitude (the slowest may be still to come)
    with Progress(total, "game", enabled=progress, time_left=False) as bar:
        for number, (member, opponent) in enumerate(zip(protocol.panel, panel, strict=True), start=1):
            bar.set_description(f"{agent.name} vs {member.label} ({number}/{len(panel)})")
            try:
                pairing = play_pairing(agent, opponent, protocol.settings(games or member.games), bar, luck=luck)
            except PairingError as error:
                card.error, card.wall_seconds = str(error), time.perf_counter() - start
                error.card = card
                raise
            card.results.append((member, replace(pairing, b=member.label)))
            card.wall_seconds = time.perf_counter() - start
            if on_opponent is not None:
                on_opponent(card)
    card.rating = fit_rating(protocol, card.results)
    card.wall_seconds = time.perf_counter() - start
    card.load_average = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    return card


if __name__ == "__main__":  # a library module: say where its command is
    raise SystemExit(
        "strategic_reserve_env.evaluation.benchmark_protocol is the benchmark's library; run it with "
        "`strategic-reserve benchmark SPEC` (`strategic-reserve benchmark --help`; "
        "in a clone also `python evaluate.py --benchmark SPEC`)"
    )
