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

#include "data/torch/batcher.h"

namespace ftbench::data {

// The micro-batches of optimizer steps [first_step, end_step) (0-based) in the order the steps
// take them: step k uses micro-batches (k mod steps_per_epoch) x grad_accum_steps onwards of
// epoch k / steps_per_epoch + 1. Computed on demand, so a run of a million steps with a large
// accumulation holds no list of them.
//
// Data parallel: of each step's grad_accum_steps micro-batches (the whole job's), rank `rank` of
// `ranks` takes the consecutive share rank x a/N .. (rank + 1) x a/N - 1 (a/N = grad_accum_steps
// / ranks, which must divide), so the ranks together train exactly the examples one process
// trains, in the same steps. Consecutive shares keep the out-of-memory fallback's property: at
// a split (m/2, 2a) a rank's share holds the rows it held at (m, a).
struct StepOrder {
  int64_t first_step = 0;
  int64_t end_step = 0;
  int64_t steps_per_epoch = 1;
  int64_t grad_accum_steps = 1;  // the job's micro-batches per step, over every rank
  int64_t rank = 0;
  int64_t ranks = 1;

  // This rank's micro-batches per step.
  int64_t per_rank() const { return grad_accum_steps / ranks; }
  int64_t size() const { return (end_step - first_step) * per_rank(); }
  // (epoch, index within the epoch) of this rank's i-th micro-batch, 0 <= i < size().
  std::pair<int64_t, int64_t> at(int64_t i) const {
    const int64_t share = per_rank();
    const int64_t step = first_step + i / share;
    return {step / steps_per_epoch + 1,
            (step % steps_per_epoch) * grad_accum_steps + rank * share + i % share};
  }
};

class Prefetcher {
 public:
  // Produces batcher.get(epoch, index) for each (epoch, index) of `order`, in that order, on
  // one background thread, at most `depth` (>= 1) micro-batches ahead of next(). `batcher` must
  // outlive the prefetcher and must not be used by anyone else meanwhile. Not copyable.
  Prefetcher(Batcher& batcher, StepOrder order, std::size_t depth);
  ~Prefetcher();  // stops the thread and joins it
  Prefetcher(const Prefetcher&) = delete;
  Prefetcher& operator=(const Prefetcher&) = delete;

  // The next micro-batch, waiting for it if it is not built yet. Rethrows an exception the
  // thread met; throws std::out_of_range past the end of `order`. Call from one thread.
  MicroBatch next();

 private:
  void produce();

  Batcher& batcher_;
  const StepOrder order_;
  const std::size_t depth_;
  int64_t taken_ = 0;  // micro-batches handed out by next()
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<MicroBatch> ready_;
  std::exception_ptr error_;
  bool stop_ = false;
  std::thread thread_;  // last: started once the members above exist
};

}  // namespace ftbench::data
