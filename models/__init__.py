"""Small real models and training graphs used by the demo, the tests and the benchmarks."""
