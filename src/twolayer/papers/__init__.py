"""The three papers (and the engine's and sweeps' own checks) as studies: content written with the public
claims SDK (``twolayer.claims``), one package per paper and one module per experiment, registered through
the entry point group ``twolayer.studies`` like any third-party study (see ``pyproject.toml``)."""
