"""One module per `tsr` command: its examples, its ``cmd_<name>(args, console)`` and its
``add_parser(sub)``. A new command is a module here, listed in :data:`tsr.interface.cli.COMMANDS`;
the audits (`tsr audit NAME`) are in :mod:`tsr.interface.audits`."""
