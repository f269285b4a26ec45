"""`slicectl exporter`: every slice's counters and limits for Prometheus (a front end)."""
