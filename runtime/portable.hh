// Lets one inline function serve the CPU and the CUDA backends: the bit-exact spec of a
// computation is written once.
#pragma once
#if defined(__CUDACC__)
#define FZG_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define FZG_HOST_DEVICE inline
#endif

// Unrolls the next loop on the GPU (its constant indices keep arrays in registers); the host's
// compiler, which does not know the pragma, unrolls as it sees fit.
#if defined(__CUDA_ARCH__)
#define FZG_UNROLL _Pragma("unroll")
#else
#define FZG_UNROLL
#endif
