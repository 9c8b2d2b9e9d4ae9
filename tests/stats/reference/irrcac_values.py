"""Compute the irrCAC reference values committed in ``irrcac_values.json``.

irrCAC pins old scipy/numpy releases, so it is not part of the test environment; its results on the
test datasets of ``tests/stats/test_agreement.py`` are computed once, in a separate environment::

    python -m venv /tmp/irr && /tmp/irr/bin/pip install irrCAC==0.4.4 pandas
    PYTHONPATH=. /tmp/irr/bin/python tests/stats/reference/irrcac_values.py > tests/stats/reference/irrcac_values.json
"""

import json
import sys

import numpy as np
import pandas as pd
from irrCAC.raw import CAC

from tests.stats.test_agreement import IRRCAC_CASES


def _estimate(compute) -> dict | None:
    try:
        est = compute()["est"]
    except ZeroDivisionError:  # the coefficient is undefined for these ratings
        return None
    return {
        "value": float(est["coefficient_value"]),
        "se": float(est["se"]),
        "ci": [float(x) for x in est["confidence_interval"]],
        "pa": float(est["pa"]),
    }


def main() -> None:
    rows = []
    for ratings, categories in IRRCAC_CASES:
        # irrCAC rounds to 5 decimals by default
        cac = CAC(pd.DataFrame(ratings), categories=categories, digits=15)
        rows.append(
            {
                "ratings": [[None if np.isnan(x) else float(x) for x in row] for row in ratings],
                "categories": None if categories is None else [float(c) for c in categories],
                "fleiss": _estimate(cac.fleiss),
                "gwet": _estimate(cac.gwet),
            }
        )
    json.dump({"irrCAC": "0.4.4", "datasets": rows}, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
