"""Compatibility probes: OCM's own binaries against our hub (skipped without them)."""
