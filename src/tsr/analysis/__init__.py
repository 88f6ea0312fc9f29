"""Analysis layer: the probe protocol (headroom, transfer matrix), the signature audit, the
comparison table and figures. It reads and writes run and probe folders; it never reaches into
a live run's state."""
