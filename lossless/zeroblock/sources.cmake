# The zero-word packer.
fzg_sources(CPU zeroblock.cc zeroblock_cpu.cc CUDA zeroblock.cu)
