"""The balancer's acting side (`slicectl balance` without --dry-run): moves made at runtime
under the unit directory's lock, verified and recorded; the stop that undoes them."""
