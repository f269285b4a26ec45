"""Live apply: the plan made true on the host (files, reload, live properties, verify) and put
back exactly on failure. Imports the core and the host edges, never a front end."""
