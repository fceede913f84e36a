"""Fault-injection tests: a proxy between the controllers and the hub that misbehaves on purpose
(``proxy.py``), its own tests (``test_proxy.py``), and rollouts run through it (``test_faults.py``)."""
