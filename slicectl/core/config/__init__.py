"""tenants.yaml and the other input users hand us: the tenants model (tenants), strict
parsing located by line (config, parsers, values, yamldoc), the one comment-keeping editor
(yamledit), untrusted JSON input (jsoninput), and settings that cannot take effect as written
(contradictions)."""
