"""The hub add-on manager (docs/behaviour/addons.md): install strategy and MCA lifecycle, configuration
references and rollout, MCA Progressing. Pure cores (no I/O) beside the kopf shell ``operator``."""
