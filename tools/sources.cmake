# For the CLI and the tests: metrics (SSIM on the GPU too) and synthetic fields.
fzg_sources(CPU metrics.cc synth.cc CUDA metrics.cu)
