"""Fails early, with the install hint, when the ``web`` extra is missing."""

from importlib.util import find_spec

from .._util.errors import MissingDependencyError

for _package, _module in (("sqlalchemy", "sqlalchemy"), ("jinja2", "jinja2")):
    if find_spec(_module) is None:
        raise MissingDependencyError("Expert annotation (ebmeval.annotate)", _package, "web")
