"""slicectl: tenants as systemd slices, placed on NUMA nodes, applied live, watched in real time."""

__version__ = "0.1.0"
