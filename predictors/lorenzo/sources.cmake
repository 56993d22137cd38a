# Dual-quantization Lorenzo: the stage, its lossy step, the CPU reference and the CUDA kernels.
fzg_sources(CPU axes.cc lorenzo.cc lorenzo_cpu.cc quantization.cc CUDA lorenzo.cu code_order.cu)
