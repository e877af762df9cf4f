"""``python -m svtjax.cli``: the ``svtjax`` command (``svtjax._interrupt.console``)."""

from svtjax._interrupt import console
from svtjax.cli import main

console(main)
