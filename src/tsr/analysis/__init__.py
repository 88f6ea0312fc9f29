"""Analysis layer: reads run folders, probe folders and audit reports, and draws them (the
comparison table, matrices, curves, the `tsr report` page). It trains nothing."""
