"""The edges: the only code that touches the host (sysfs, cgroupfs, systemd over D-Bus, unit
directories, files and the lock). Each reader takes a root, so tests use fixture trees. Imports
the core, never `apply`, `views` or a front end."""
