"""Importers: benchmark result files and the deployment file that says what ran, into measurement rows."""
