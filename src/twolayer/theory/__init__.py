"""Closed-form theory: geometry, constants and predicted quantities of the papers, as pure functions."""
