"""A synthetic host for `slicectl demo` and the tests: a bundled topology, a cgroup tree whose
counters move, and a fake systemd on a private D-Bus (`fakesystemd`).

Only front ends import this folder (tests/test_layers.py): the core, the edges and apply never
reach the fake.
"""
