"""Pure helpers every controller core shares: readers of the wire form (``wire``) and of a
Placement's decision pages (``decisions``). No I/O; nothing here knows a particular controller."""
