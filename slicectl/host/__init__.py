"""The edges: the only code that touches the host, one topic folder each (systemd, files,
cgroup, topology), and at the top the one tenants.yaml loader and host plan (planning) and
one_shot (oneshot). Each reader takes a root, so tests use fixture trees. Imports the core,
never `apply`, `views` or a front end."""
