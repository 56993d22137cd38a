# GPULZ: multi-byte LZSS on the chunked-stream layer.
fzg_sources(CPU gpulz.cc gpulz_cpu.cc CUDA gpulz.cu gpulz_block.cu)
