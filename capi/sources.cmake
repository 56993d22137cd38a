# The C API (fzg.h), for the HDF5 filter, other languages and plugins.
fzg_sources(CPU fzg_c.cc)
