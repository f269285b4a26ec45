"""Manual pages generated from the parser and the property table by docs/update-man (package
data; `slicectl install` places them)."""
