# bitshuffle + zero-block (one word per block) as one composite step on the GPU.
fzg_sources(CPU shuffle_pack.cc CUDA shuffle_pack.cu)
