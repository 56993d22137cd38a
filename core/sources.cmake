# Graph core: the API, the stage contract, graphs, plans, the executor and the container.
fzg_sources(
  CPU checksum.cc container.cc device_checks.cc error.cc executor.cc field.cc graph.cc graph_code.cc missing_values.cc plan.cc registry.cc
  CUDA checksum.cu container.cu field.cu)
