"""The ten probes (one package each) and the shared engine (core/); the catalogue is probes/catalogue.py.

Kept empty so that importing any engine module (errors, version, targets) does not load every probe.
"""
