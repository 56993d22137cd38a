# Device runtime: buffers and the device pool, lanes, timers and the trace.
fzg_sources(
  CPU buffer.cc lanes.cc timer.cc trace.cc
  CUDA device_memory.cu timer.cu)
