"""The live view of ``ocm-rollout up``: clusters, placements, rollouts and add-ons as the hub
has them, kept up to date from watches (``live_view``), computed incrementally
(``view_state``) from pure snapshot functions (``sim_view``), which reuse the controllers'
own report builders so that the view and ``ocm-rollout status`` agree.
"""
