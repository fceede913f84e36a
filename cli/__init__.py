"""The top layer: the ``ocm-rollout`` command (``main``), its subcommands (``commands/``) and
the live view of ``ocm-rollout up`` (``view/``). The only code that knows both the controllers
and the local hub: ``up`` serves the hub, starts the simulated fleet and the controllers as
processes, and shows what they do.
"""
