"""``python -m pysched``: the same as the ``pysched`` command."""

from pysched.cli import main

main()
