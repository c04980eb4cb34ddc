"""``python -m roofline.cli``: the command line (as ``python -m roofline``)."""

from roofline.cli import run

run()
