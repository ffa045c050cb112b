"""pysched: a workload scheduler in the style of Autosys and Control-M, on Trio."""

from pysched.zone_data import use_packaged_zone_data

# zone data never depends on the host (see pysched.zone_data); before any zone is read
use_packaged_zone_data()
