# For the CLI and the tests: metrics and synthetic fields.
fzg_sources(CPU metrics.cc synth.cc)
