"""What slicectl advises: the lint rules, tenants.yaml against what published studies found
(lint), and memory sizes recommended from recorded footprints (recommend)."""
