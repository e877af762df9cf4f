"""``python -m svtjax.audit ARGS``: the same as ``svtjax audit ARGS`` (the command line lives in
``svtjax.cli.audit``)."""

import sys

from svtjax._interrupt import console

sys.argv.insert(1, "audit")
console()
