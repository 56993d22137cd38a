#include "core/device_checks.hh"

#include <cstring>

#include "core/error.hh"

namespace fzg {

DeviceChecks::DeviceChecks(cudaStream_t stream)
    : stream_(stream), words_(Buffer::device(capacity * sizeof(uint32_t), stream)) {
  zero_bytes(words_.data(), Location::device, words_.size(), stream);
}

uint32_t* DeviceChecks::word(const std::string& what) {
  std::lock_guard<std::mutex> lock(mutex_);
  size_t i = 0;
  while (i < names_.size() && names_[i] != what) ++i;
  if (i == names_.size()) {
    if (i == capacity) fail(ErrorCode::invalid_argument, "device checks: more than 64 kinds in one call");
    names_.push_back(what);
  }
  return words_.as<uint32_t>() + i;
}

void DeviceChecks::read_back_later() {
  std::lock_guard<std::mutex> lock(mutex_);
  queued_words_ = names_.size();
  if (queued_words_) queued_ = std::make_unique<QueuedReadBack>(words_.data(), queued_words_ * sizeof(uint32_t), stream_);
}

void DeviceChecks::finish() {
  std::vector<uint32_t> failed;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    failed.resize(names_.size());
  }
  if (queued_ && queued_words_ == failed.size()) {
    std::memcpy(failed.data(), queued_->wait(), failed.size() * sizeof(uint32_t));
    queued_.reset();
  } else {
    copy_bytes(failed.data(), Location::host, words_.data(), Location::device, failed.size() * sizeof(uint32_t),
               stream_);
  }
  for (size_t i = 0; i < failed.size(); ++i)
    if (failed[i]) require_data(false, names_[i].c_str());
}

StepChecks::StepChecks(DeviceChecks* call_checks, cudaStream_t stream)
    : own_(call_checks ? nullptr : std::make_unique<DeviceChecks>(stream)), used_(call_checks ? call_checks : own_.get()) {}

void StepChecks::finish() {
  if (own_) own_->finish();
}

}  // namespace fzg
