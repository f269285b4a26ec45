"""The pure core: tenants.yaml and its property table, the topology model, placement, the plan,
rendering, metrics and advice. No I/O on the host, and nothing imported from `host`, `apply`,
`views` or a front end (tests/test_layers.py)."""
