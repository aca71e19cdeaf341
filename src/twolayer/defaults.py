"""Defaults shared by the run store and the command line, in a module that imports nothing (so that
``twolayer --help`` loads neither numpy nor pydantic)."""

DEFAULT_OUT = "twolayer-out"  # the output folder of run directories when --out / out= is not given
