from __future__ import annotations

import itertools
from collections import Counter

import pytest

from ebmeval._util.errors import ConfigError
from ebmeval.annotate import latin_square_plan


@pytest.mark.parametrize(("n_items", "n_systems", "n_annotators", "k"), [(12, 3, 4, 2), (20, 4, 5, 3), (9, 3, 3, 3)])
def test_every_item_gets_k_distinct_annotators_and_loads_are_even(n_items, n_systems, n_annotators, k):
    plan = latin_square_plan(n_items, n_systems, n_annotators, k, seed=1)
    by_item: dict[int, list[int]] = {}
    for t in plan:
        by_item.setdefault(t.item, []).append(t.annotator)
    assert sorted(by_item) == list(range(n_items))
    assert all(len(a) == k and len(set(a)) == k for a in by_item.values())
    loads = Counter(t.annotator for t in plan)
    assert max(loads.values()) - min(loads.values()) <= 1


@pytest.mark.parametrize(("n_items", "n_systems", "n_annotators", "k"), [(12, 3, 4, 2), (20, 4, 5, 3), (9, 3, 3, 3)])
def test_each_annotator_sees_every_system_in_every_position_equally_often(n_items, n_systems, n_annotators, k):
    plan = latin_square_plan(n_items, n_systems, n_annotators, k, seed=3)
    for a in range(n_annotators):
        tasks = [t for t in plan if t.annotator == a]
        assert len(tasks) % n_systems == 0  # the parameters are chosen so the square completes
        assert all(sorted(t.systems) == list(range(n_systems)) for t in tasks)
        positions = Counter((pos, s) for t in tasks for pos, s in enumerate(t.systems))
        assert set(positions.values()) == {len(tasks) // n_systems}
        assert len(positions) == n_systems * n_systems


def test_incomplete_squares_stay_within_one_of_balance():
    plan = latin_square_plan(7, 3, 2, 2, seed=0)
    for a in range(2):
        counts = Counter((pos, s) for t in plan if t.annotator == a for pos, s in enumerate(t.systems))
        assert max(counts.values()) - min(counts.values()) <= 1


def test_pairwise_plan_balances_systems_and_sides():
    n_systems = 4
    pairs = n_systems * (n_systems - 1) // 2
    plan = latin_square_plan(2 * pairs * 3, n_systems, 3, 1, seed=5, per_task=2)
    for a in range(3):
        tasks = [t for t in plan if t.annotator == a]
        assert all(len(t.systems) == 2 and t.systems[0] != t.systems[1] for t in tasks)
        sides = Counter((pos, s) for t in tasks for pos, s in enumerate(t.systems))
        assert set(sides.values()) == {len(tasks) * 2 // (2 * n_systems)}
        shown_pairs = Counter(frozenset(t.systems) for t in tasks)
        assert len(shown_pairs) == pairs and len(set(shown_pairs.values())) == 1


def test_orders_are_seeded_and_differ_between_annotators():
    a = latin_square_plan(30, 3, 3, 2, seed=11)
    assert a == latin_square_plan(30, 3, 3, 2, seed=11)
    assert a != latin_square_plan(30, 3, 3, 2, seed=12)
    orders = [[t.item for t in a if t.annotator == x] for x in range(3)]
    assert all(o != sorted(o) for o in orders)
    perms = {tuple(t.systems) for t in a if t.position == 0}
    assert len(perms) > 1  # the first task of each annotator shows the systems in different orders


def test_items_shared_by_annotators_are_shown_in_different_orders():
    plan = latin_square_plan(30, 3, 3, 3, seed=2)
    by_item: dict[int, set[tuple[int, ...]]] = {}
    for t in plan:
        by_item.setdefault(t.item, set()).add(t.systems)
    assert sum(len(v) > 1 for v in by_item.values()) > 20


@pytest.mark.parametrize(
    ("args", "kwargs", "field"),
    [((5, 3, 2, 3), {}, "'k'"), ((5, 1, 2, 1), {"per_task": 2}, "'systems'"), ((0, 3, 2, 1), {}, "'study'")],
)
def test_bad_designs_are_refused(args, kwargs, field):
    with pytest.raises(ConfigError, match=field):
        latin_square_plan(*args, seed=0, **kwargs)


def test_pairs_cover_all_combinations():
    plan = latin_square_plan(12, 3, 1, 1, seed=0, per_task=2)
    assert {frozenset(t.systems) for t in plan} == {frozenset(p) for p in itertools.combinations(range(3), 2)}
