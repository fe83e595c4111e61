"""Bundled scenario files (installed as ``edgegym.scenario_data``)."""
