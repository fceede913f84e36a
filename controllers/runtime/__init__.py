"""Runtime plumbing shared by the controllers: registry, queues, leader election, metrics."""
