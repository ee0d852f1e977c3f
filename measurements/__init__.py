"""Measured serving runs: one schema (schema.py), loaders (loaders.py), benchmark protocols per source
(protocols.py) and the mapping of rows to estimator inputs (mapping.py). See README.md."""
