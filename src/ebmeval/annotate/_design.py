"""Who scores what, in which order: a Latin-square assignment of items and systems to annotators."""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass

from .._util.errors import ConfigError


@dataclass(frozen=True)
class PlannedTask:
    """One task of one annotator.

    Attributes:
        annotator: Annotator index.
        position: 0-based place of the task in the annotator's sequence.
        item: Item index.
        systems: System indices in the order their candidates are shown.
    """

    annotator: int
    position: int
    item: int
    systems: tuple[int, ...]


def latin_square_plan(
    n_items: int, n_systems: int, n_annotators: int, k: int, *, seed: int, per_task: int | None = None
) -> list[PlannedTask]:
    """Assign every item to ``k`` annotators and order the candidates of each task by a Latin square.

    * Items: the j-th rating of item i goes to annotator ``(i * k + j) mod A``, so each item gets
      ``k`` distinct annotators and workloads differ by at most one task.
    * Item order: shuffled per annotator with ``Random(f"{seed}:{a}")``.
    * Candidates, all systems per task (``per_task=None``): task t of annotator a shows row
      ``r = (t + a) mod S`` of the cyclic Latin square, position c holding symbol ``(r + c) mod S``;
      symbols map to systems through a seeded per-annotator permutation, which hides any fixed
      system order. Over any S consecutive tasks every system appears once in every position.
    * Pairs (``per_task=2``): the P = S(S-1)/2 system pairs, then the same pairs swapped, are cycled
      with offset a; over any 2P consecutive tasks every system is shown S-1 times in each of the
      two positions.

    Args:
        n_items: Number of items.
        n_systems: Number of systems (S).
        n_annotators: Number of annotators (A).
        k: Annotators per item, 1 <= k <= A.
        seed: Seed of the item orders and system permutations.
        per_task: Candidates per task: None for all systems, or 2 for pairwise comparison.

    Returns:
        The tasks, sorted by annotator and position.
    """
    if n_items < 1 or n_systems < 1 or n_annotators < 1:
        raise ConfigError("study", "needs at least one item, one system and one annotator")
    if not 1 <= k <= n_annotators:
        raise ConfigError("k", f"annotators per item must be between 1 and the {n_annotators} annotators, got {k}")
    if per_task not in (None, 2):
        raise ConfigError("per_task", f"must be None (all systems) or 2 (pairs), got {per_task}")
    if per_task == 2 and n_systems < 2:
        raise ConfigError("systems", "pairwise comparison needs at least two systems")
    items: list[list[int]] = [[] for _ in range(n_annotators)]
    for i in range(n_items):
        for j in range(k):
            items[(i * k + j) % n_annotators].append(i)
    pairs = list(itertools.combinations(range(n_systems), 2))
    cycle = pairs + [(b, a) for a, b in pairs]
    plan: list[PlannedTask] = []
    for a, own in enumerate(items):
        rng = random.Random(f"{seed}:{a}")
        rng.shuffle(own)
        perm = rng.sample(range(n_systems), n_systems)
        for t, item in enumerate(own):
            if per_task is None:
                row = (t + a) % n_systems
                symbols: tuple[int, ...] = tuple((row + c) % n_systems for c in range(n_systems))
            else:
                symbols = cycle[(t + a) % len(cycle)]
            plan.append(PlannedTask(a, t, item, tuple(perm[s] for s in symbols)))
    return plan
