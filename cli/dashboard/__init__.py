"""``ocm-rollout dashboard``: every rollout of the fleet in a browser, live, with its actions.

The server (``server``) follows the hub's watches (``store``), turns what it holds into the
pages' JSON with pure functions (``rollouts_view``, ``placement_view``, ``fleet_view``), pushes a
change notice to the open pages (server-sent events), and runs the same ``ocm-rollout rollout``
verbs as the CLI (``actions``) behind the checks of ``security``. The front end is the static
files under ``static/``: no build step, no third-party code.
"""
