// Lets one inline function serve the CPU and the CUDA backends: the bit-exact spec of a
// computation is written once.
#pragma once
#if defined(__CUDACC__)
#define FZG_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define FZG_HOST_DEVICE inline
#endif
