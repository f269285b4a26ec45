"""What the front ends show: tables, the NUMA map and the rows of status/top/TUI, computed from
core values. Imports only the core; the CLI, the TUI and the exporter share it."""
