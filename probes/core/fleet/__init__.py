"""Fleets: inventories, peer comparison, Prometheus metrics, the fleet screen's model."""
