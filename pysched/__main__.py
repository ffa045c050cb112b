"""``python -m pysched``: the same as the ``pysched`` command."""

from pysched.entry import main

main()
