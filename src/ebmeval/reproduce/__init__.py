"""``ebmeval reproduce``: a paper's protocol run on the user's models, its tables beside the published ones.

A :class:`Preset` names the paper's conditions (task, options, prompt set, context) and the
builders of its tables; :func:`reproduce` runs every condition on every model as an ordinary,
resumable run; each builder prints a table with our value, the published value and the
difference, every value of ours traced to its run and score set. Inputs only the user has (a
file, an index) are the preset's :class:`PresetOption` s, which conditions take as task options.
A preset is one module in
``ebmeval.reproduce.presets`` (or a plugin under the ``presets`` entry point) that calls
:func:`register_preset`.
"""

from ._preset import Condition, Preset, PresetOption, TableBuilder, preset_registry, register_preset
from ._reproduce import ConditionRun, Reproduction, condition_config, reproduce
from ._tables import CellTrace, Entry, Measure, TracedTable, comparison, comparison_table

__all__ = [
    "CellTrace",
    "Condition",
    "ConditionRun",
    "Entry",
    "Measure",
    "Preset",
    "PresetOption",
    "Reproduction",
    "TableBuilder",
    "TracedTable",
    "comparison",
    "comparison_table",
    "condition_config",
    "preset_registry",
    "register_preset",
    "reproduce",
]
