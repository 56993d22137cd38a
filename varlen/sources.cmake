# The shared variable-length layer: scans, look-back placement, the chunked-stream scaffold.
fzg_sources(CPU chunked_stream.cc)
