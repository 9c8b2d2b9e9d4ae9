"""Helpers shared by the statistics tests."""

import numpy as np
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

# Property tests run many small statistics; a modest example count keeps the suite quick, and the
# first call of a function (imports, caches) must not count against a per-example deadline.
PROPERTY = settings(max_examples=40, deadline=None)

# Finite, moderately scaled floats: the invariants hold exactly only up to rounding, and huge or
# tiny magnitudes would only test floating-point overflow.
FLOATS = st.floats(min_value=-1e3, max_value=1e3, allow_nan=False, allow_infinity=False)


def vectors(min_size: int = 2, max_size: int = 30) -> st.SearchStrategy[np.ndarray]:
    """One-dimensional float arrays."""
    return arrays(np.float64, st.integers(min_size, max_size), elements=FLOATS)


def paired_vectors(min_size: int = 2, max_size: int = 30) -> st.SearchStrategy[tuple[np.ndarray, np.ndarray]]:
    """Two float arrays of the same length."""
    return st.integers(min_size, max_size).flatmap(
        lambda n: st.tuples(arrays(np.float64, n, elements=FLOATS), arrays(np.float64, n, elements=FLOATS))
    )
