#include "data/torch/prefetcher.h"

#include <stdexcept>

namespace ftbench::data {

Prefetcher::Prefetcher(Batcher& batcher, StepOrder order, std::size_t depth)
    : batcher_(batcher),
      order_(order),
      depth_(depth < 1 ? 1 : depth),
      thread_([this] { produce(); }) {}

Prefetcher::~Prefetcher() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

void Prefetcher::produce() {
  for (int64_t i = 0; i < order_.size(); ++i) {
    const auto [epoch, index] = order_.at(i);
    {
      std::unique_lock<std::mutex> lock(mutex_);
      changed_.wait(lock, [this] { return stop_ || ready_.size() < depth_; });
      if (stop_) return;
    }
    MicroBatch mb;
    try {
      mb = batcher_.get(epoch, index);
    } catch (...) {
      std::lock_guard<std::mutex> lock(mutex_);
      error_ = std::current_exception();
      changed_.notify_all();
      return;
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ready_.push_back(std::move(mb));
    }
    changed_.notify_all();
  }
}

MicroBatch Prefetcher::next() {
  if (taken_ >= order_.size()) {
    throw std::out_of_range("Prefetcher::next: all " + std::to_string(order_.size()) +
                            " micro-batches were taken");
  }
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(lock, [this] { return !ready_.empty() || error_ != nullptr; });
  if (ready_.empty()) std::rethrow_exception(error_);
  MicroBatch mb = std::move(ready_.front());
  ready_.pop_front();
  ++taken_;
  lock.unlock();
  changed_.notify_all();
  return mb;
}

}  // namespace ftbench::data
