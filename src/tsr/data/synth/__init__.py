"""The bundled synthetic benchmark: its language, task families, generator configs and the
shipped streams."""
