// Checks of a file's data that a GPU decode leaves on the device. A decoder that waited for a
// count to come back before its next kernel idled the GPU ~10-20 us each time, most of a
// small field's call; instead, the kernel that finds the data inconsistent sets its check's
// word and keeps every later kernel memory-safe (each reads only what the check would have
// allowed), and the words come back once, at the call's end, beside the stream checksums.
// The first word set fails the call with corrupt_data and the check's own message, as the
// CPU fails at once: both backends accept exactly the same files.
#pragma once
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/buffer.hh"

namespace fzg {

class DeviceChecks {
 public:
  // Zeroes its words on `stream`: kernels that use them run after, on that stream or on one
  // that waits for it.
  explicit DeviceChecks(cudaStream_t stream);
  // The device word of the check `what` (the same word for the same text, from any thread):
  // a kernel writes a non-zero value there when the data fails the check.
  uint32_t* word(const std::string& what);
  // Queues the words' copy to the host after the work queued on the stream so far, for a
  // finish() after the caller's own wait for that stream (the stream checksums'): then the
  // call waits once, not twice.
  void read_back_later();
  // Waits for the work queued on the stream so far (or for read_back_later()'s copy); throws
  // corrupt_data naming the first check that failed.
  void finish();

 private:
  static constexpr size_t capacity = 64;  // distinct checks in one call (a handful per stage)
  cudaStream_t stream_;
  Buffer words_;
  std::mutex mutex_;
  std::vector<std::string> names_;
  std::unique_ptr<QueuedReadBack> queued_;
  size_t queued_words_ = 0;
};

// The checks one GPU decode step uses: the call's (the executor's, read back at its end), or,
// for a stage run on its own, checks of its own that finish() reads back.
class StepChecks {
 public:
  StepChecks(DeviceChecks* call_checks, cudaStream_t stream);
  uint32_t* word(const std::string& what) { return used_->word(what); }
  // Throws for a failed check of its own; the call's wait for the call's end.
  void finish();

 private:
  std::unique_ptr<DeviceChecks> own_;
  DeviceChecks* used_;
};

}  // namespace fzg
