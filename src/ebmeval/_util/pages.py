"""The page layout the web apps share (``ebmeval view``, ``ebmeval annotate``)."""

from pathlib import Path

LAYOUT = Path(__file__).parent / "templates"
"""The folder of ``page.html``: the HTML page (head, header bar, main) that each app's ``base.html`` extends."""


def template_folders(app_templates: Path) -> list[str]:
    """The template search path of a web app: its own ``app_templates``, then the shared layout."""
    return [str(app_templates), str(LAYOUT)]
