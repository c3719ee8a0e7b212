"""Benchmarks (JSON + PNG under benchmarks/out/); run as modules from the repo root."""
