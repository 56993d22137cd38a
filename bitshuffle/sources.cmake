# The 32x32 bit-plane transform.
fzg_sources(CPU bitshuffle.cc bitshuffle_cpu.cc CUDA bitshuffle.cu)
