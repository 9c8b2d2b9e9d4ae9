import dataclasses

import pytest

import ebmeval.stats as stats
from ebmeval.stats import AdjustedPValues, BlandAltman, Estimate, Ratings, TestResult


def test_public_names_are_exported():
    assert sorted(stats.__all__) == sorted(set(stats.__all__))
    for name in stats.__all__:
        assert getattr(stats, name) is not None


@pytest.mark.parametrize("result_type", [Estimate, TestResult, BlandAltman, Ratings, AdjustedPValues])
def test_results_are_frozen(result_type):
    fields = {f.name: None for f in dataclasses.fields(result_type)}
    result = result_type(**fields)
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.method = "changed"
