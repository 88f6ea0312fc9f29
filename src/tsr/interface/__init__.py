"""The `tsr` command's larger commands, each with its parser: `tsr probe`, `tsr audit`,
`tsr signatures` (the rest live in :mod:`tsr.cli`, which wires these in)."""
