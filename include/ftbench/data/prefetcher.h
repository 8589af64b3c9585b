// Builds the training micro-batches on a background thread, ahead of the step that needs them,
// so tokenised examples are padded or packed and copied to the device while the model computes.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "ftbench/data/batcher.h"

namespace ftbench::data {

class Prefetcher {
 public:
  // Produces batcher.get(epoch, index) for each (epoch, index) of `order`, in that order, on
  // one background thread, at most `depth` (>= 1) micro-batches ahead of next(). `batcher` must
  // outlive the prefetcher and must not be used by anyone else meanwhile. Not copyable.
  Prefetcher(Batcher& batcher, std::vector<std::pair<int64_t, int64_t>> order, std::size_t depth);
  ~Prefetcher();  // stops the thread and joins it
  Prefetcher(const Prefetcher&) = delete;
  Prefetcher& operator=(const Prefetcher&) = delete;

  // The next micro-batch, waiting for it if it is not built yet. Rethrows an exception the
  // thread met; throws std::out_of_range past the end of `order`. Call from one thread.
  MicroBatch next();

 private:
  void produce();

  Batcher& batcher_;
  const std::vector<std::pair<int64_t, int64_t>> order_;
  const std::size_t depth_;
  std::size_t taken_ = 0;  // micro-batches handed out by next()
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<MicroBatch> ready_;
  std::exception_ptr error_;
  bool stop_ = false;
  std::thread thread_;  // last: started once the members above exist
};

}  // namespace ftbench::data
