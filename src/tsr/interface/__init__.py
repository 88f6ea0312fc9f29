"""The `tsr` command: :mod:`.cli` is its entry point (the top-level parser, errors, signals),
:mod:`.commands` holds one module per command, :mod:`.audits` one per `tsr audit NAME`,
:mod:`.args` what their parsers share, :mod:`.display` and :mod:`.grid_output` what they print."""
