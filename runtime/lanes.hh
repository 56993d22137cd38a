// Chunks in flight side by side on the GPU. A chunk's stages synchronize with the host where a
// size decides the next allocation; run one after another, the GPU idles at each of those
// points and in each kernel's ramp and tail. Lanes are host threads, each with a CUDA stream
// of its own, taking chunks in turn: while one lane waits for a size, the others' kernels run.
#pragma once
#include <cstdint>
#include <functional>

#include "core/field.hh"
#include "runtime/buffer.hh"

namespace fzg {

// Runs work(k, lane_stream) for every k in [0, count). On the CPU, or with one lane or one
// chunk, the calls run in order on the calling thread with `stream` itself. Otherwise up to
// `lanes` threads take chunks in order; each lane's stream first waits for the work queued on
// `stream` so far, and `stream` waits for every lane's work before the call returns (so what
// the lanes produced is ready in `stream`'s order). The first exception a call throws is
// rethrown once every lane has stopped.
void run_in_lanes(Device device, cudaStream_t stream, uint64_t count, unsigned lanes,
                  const std::function<void(uint64_t k, cudaStream_t lane_stream)>& work);

// Makes each of the lanes' streams of the last run_in_lanes on this thread wait for the work
// queued on `stream` so far: buffers a lane allocated (and frees in its stream's order) that
// `stream` still reads are then not reused before that reading is done.
void lanes_wait_for(cudaStream_t stream);

// Makes `waiter` wait for the work queued on `stream` so far, on the GPU: the host goes on.
// Nothing to do without CUDA or when they are the same stream.
void stream_wait(cudaStream_t waiter, cudaStream_t stream);

}  // namespace fzg
