"""The error raised for a mistake in the arguments passed to a statistic."""


class StatsInputError(ValueError):
    """An argument is unusable: wrong shape, too few observations, an unknown option, ...

    The message names the argument and the offending value.
    """
