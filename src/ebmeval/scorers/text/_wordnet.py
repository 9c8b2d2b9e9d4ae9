"""WordNet 3.0 for METEOR, read from the Debian packages ``wordnet-base`` and ``wordnet-sense-index``.

Debian installs the database files in ``/usr/share/wordnet`` but not the small
``lexnames`` table that NLTK's reader opens first; its 45 rows are fixed by the
WordNet 3.0 format (``lexnames(5WN)``), so the reader below serves them from memory.
"""

from __future__ import annotations

import io
import os
import warnings
from functools import cache
from pathlib import Path
from typing import Any

from ..._util.errors import MissingDependencyError, UsageError

DEFAULT_WORDNET_DIR = "/usr/share/wordnet"
"""Where Debian's ``wordnet-base`` installs WordNet 3.0."""
WORDNET_DIR_ENV = "EBMEVAL_WORDNET_DIR"
"""Environment variable naming another directory that holds the WordNet 3.0 database files."""

LEXNAMES = (
    "adj.all adj.pert adv.all noun.Tops noun.act noun.animal noun.artifact noun.attribute noun.body "
    "noun.cognition noun.communication noun.event noun.feeling noun.food noun.group noun.location "
    "noun.motive noun.object noun.person noun.phenomenon noun.plant noun.possession noun.process "
    "noun.quantity noun.relation noun.shape noun.state noun.substance noun.time verb.body verb.change "
    "verb.cognition verb.communication verb.competition verb.consumption verb.contact verb.creation "
    "verb.emotion verb.motion verb.perception verb.possession verb.social verb.stative verb.weather adj.ppl"
).split()
"""WordNet 3.0 lexicographer file names, by file number (``lexnames(5WN)``)."""

_CATEGORY = {"noun": 1, "verb": 2, "adj": 3, "adv": 4}
_REQUIRED = ("index.sense", "index.noun", "data.noun", "data.verb", "verb.exc")


def lexnames_text() -> str:
    """The ``lexnames`` file: ``NN<TAB>name<TAB>category`` per line (1 noun, 2 verb, 3 adj, 4 adv)."""
    return "".join(f"{i:02d}\t{name}\t{_CATEGORY[name.split('.')[0]]}\n" for i, name in enumerate(LEXNAMES))


def wordnet_dir() -> Path:
    """The WordNet directory: ``$EBMEVAL_WORDNET_DIR`` when set, else ``/usr/share/wordnet``."""
    return Path(os.environ.get(WORDNET_DIR_ENV) or DEFAULT_WORDNET_DIR)


def load_wordnet(root: str | Path | None = None) -> Any:
    """An NLTK ``WordNetCorpusReader`` over the WordNet 3.0 files in ``root`` (default :func:`wordnet_dir`).

    Raises ``UsageError`` naming the Debian packages when the files are missing.
    """
    return _load(Path(root) if root is not None else wordnet_dir())


@cache
def _load(root: Path) -> Any:
    missing = [name for name in _REQUIRED if not (root / name).is_file()]
    if missing:
        raise UsageError(
            f"METEOR needs WordNet 3.0 in {root} (missing: {', '.join(missing)}). Install the Debian packages "
            f"'wordnet-base' and 'wordnet-sense-index' (apt-get install wordnet-base wordnet-sense-index), "
            f"or set {WORDNET_DIR_ENV} to a directory holding the WordNet 3.0 database files."
        )
    try:
        import nltk.data
        from nltk.corpus.reader.wordnet import WordNetCorpusReader
    except ImportError:
        raise MissingDependencyError("METEOR", "nltk", "metrics") from None
    # NLTK only opens corpus files under the roots listed in nltk.data.path.
    if str(root) not in nltk.data.path:
        nltk.data.path.append(str(root))

    class DebianWordNetReader(WordNetCorpusReader):  # type: ignore[misc]
        """Serves ``lexnames``, absent from Debian's packages, from :data:`LEXNAMES`."""

        def open(self, file: str) -> Any:
            if file == "lexnames" and not (root / file).is_file():
                return io.StringIO(lexnames_text())
            return super().open(file)

        def map_wn(self, version: str = "wordnet") -> None:
            # The mapping serves Open Multilingual Wordnet data keyed by WordNet 3.0 synsets; this
            # reader is WordNet 3.0 itself and loads no OMW, so there is nothing to map (NLTK would
            # otherwise look for its own downloaded copy to map from).
            return None

    with warnings.catch_warnings():
        # No Open Multilingual Wordnet is loaded: METEOR uses English synonyms only.
        warnings.filterwarnings("ignore", message="The multilingual functions are not available")
        return DebianWordNetReader(str(root), None)
