# GPULZ: multi-byte LZSS on the chunked-stream layer. Its encode's four coder kinds build as
# units of their own, side by side (gpulz_coder.cuh).
fzg_sources(CPU gpulz.cc gpulz_cpu.cc
            CUDA gpulz.cu gpulz_warp_narrow.cu gpulz_warp_wide.cu gpulz_block_narrow.cu gpulz_block_wide.cu)
