"""The balancer, `slicectl balance` (docs/balance.md): its daemon loop (daemon), what each
round takes from tenants.yaml and the state file (rounds), and its acting side (mover): moves
made at runtime under the unit directory's lock, verified and recorded, and the stop that
undoes them. The CLI only parses the options and calls daemon.run."""
