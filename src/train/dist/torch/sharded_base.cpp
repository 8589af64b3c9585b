#include "train/dist/torch/sharded_base.h"

#include <chrono>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

#include <ATen/ATen.h>
#include <torch/utils.h>

namespace ftbench::dist {

ShardedBase::ShardedBase(Communicator& group, std::vector<model::BaseUnit>& units)
    : group_(group),
      units_(units),
      shards_(units.size()),
      states_(units.size(), State::kEmpty),
      pending_(units.size()) {
  for (std::size_t i = 0; i < units_.size(); ++i) {
    if (units_[i].numel() % group_.size() != 0) {
      throw std::invalid_argument(fmt::format(
          "ShardedBase: unit {} has {} elements, which {} ranks do not split (the model was "
          "laid out for another number of ranks)",
          i, units_[i].numel(), group_.size()));
    }
  }
}

ShardedBase::~ShardedBase() {
  for (std::unique_ptr<PendingGather>& p : pending_) p.reset();
  for (model::BaseUnit& unit : units_) unit.free();
}

std::size_t ShardedBase::index(int64_t unit) const {
  if (unit < 0 || unit >= static_cast<int64_t>(units_.size())) {
    throw std::logic_error(
        fmt::format("ShardedBase: unit {} of a base of {} units", unit, units_.size()));
  }
  return static_cast<std::size_t>(unit);
}

void ShardedBase::keep_shard(int64_t unit) {
  const std::size_t i = index(unit);
  model::BaseUnit& u = units_[i];
  if (!u.whole()) {
    throw std::logic_error(fmt::format("ShardedBase::keep_shard: unit {} is not whole", unit));
  }
  const int64_t n = u.numel() / group_.size();
  torch::NoGradGuard no_grad;
  shards_[i] = u.flat().narrow(0, group_.rank() * n, n).clone();
  u.free();
  states_[i] = State::kEmpty;
}

int64_t ShardedBase::shard_bytes() const {
  int64_t bytes = 0;
  for (const at::Tensor& s : shards_) {
    if (s.defined()) bytes += s.numel() * static_cast<int64_t>(s.element_size());
  }
  return bytes;
}

void ShardedBase::begin_pass(const std::vector<int64_t>& order) {
  if (next_ < order_.size()) {
    throw std::logic_error(fmt::format(
        "ShardedBase: a pass begins while the last one has {} of its {} gathers to make",
        order_.size() - next_, order_.size()));
  }
  for (std::size_t i = 0; i < states_.size(); ++i) {
    if (states_[i] != State::kEmpty) {
      throw std::logic_error(
          fmt::format("ShardedBase: a pass begins while unit {} is still gathered", i));
    }
  }
  for (int64_t unit : order) index(unit);
  order_ = order;
  next_ = 0;
}

void ShardedBase::start(int64_t unit) {
  const std::size_t i = index(unit);
  if (states_[i] != State::kEmpty) return;
  if (!shards_[i].defined()) {
    throw std::logic_error(
        fmt::format("ShardedBase: unit {} was never filled (keep_shard), so has no slice", unit));
  }
  model::BaseUnit& u = units_[i];
  if (before_allocate_) before_allocate_(unit);
  u.allocate();
  try {
    pending_[i] = group_.start_all_gather(u.flat(), shards_[i]);
  } catch (...) {
    u.free();
    throw;
  }
  states_[i] = State::kInFlight;
  ++stats_.calls;
  stats_.bytes += u.bytes();
}

void ShardedBase::finish(int64_t unit) {
  start(unit);
  const std::size_t i = index(unit);
  if (states_[i] != State::kInFlight) return;
  const auto began = std::chrono::steady_clock::now();
  pending_[i]->wait();
  stats_.blocked_seconds +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  pending_[i].reset();
  states_[i] = State::kWhole;
}

void ShardedBase::gather(int64_t unit) {
  if (next_ >= order_.size() || order_[next_] != unit) {
    throw std::logic_error(fmt::format("ShardedBase: gather of unit {} where the pass {}", unit,
                                       next_ >= order_.size()
                                           ? std::string("has no gather left")
                                           : fmt::format("expects unit {}", order_[next_])));
  }
  // Started before the pass moves on: a unit that cannot be given memory (out of memory) is
  // still the pass's next one, which complete_pass() then gathers as the peers do.
  start(unit);
  ++next_;
  // The pass's next unit travels while this one computes.
  if (next_ < order_.size() && order_[next_] != unit) start(order_[next_]);
  finish(unit);
}

void ShardedBase::release(int64_t unit) noexcept {
  if (unit < 0 || unit >= static_cast<int64_t>(units_.size())) return;
  const auto i = static_cast<std::size_t>(unit);
  if (states_[i] != State::kWhole) return;
  units_[i].free();
  states_[i] = State::kEmpty;
}

void ShardedBase::complete_pass() {
  try {
    // First what belongs to positions already passed: units still whole, and a gather issued
    // for the current unit but never waited for (the pass stopped while the next one was being
    // started), given back without a collective. A gather in flight for the next position (a
    // prefetch) counts for that position. Then the rest, one unit at a time, each released at
    // once, on a rank that may just have run out of memory.
    for (std::size_t i = 0; i < states_.size(); ++i) {
      const bool ahead = next_ < order_.size() && order_[next_] == static_cast<int64_t>(i);
      if (states_[i] == State::kInFlight && !ahead) finish(static_cast<int64_t>(i));
      release(static_cast<int64_t>(i));
    }
    while (next_ < order_.size()) {
      const int64_t unit = order_[next_++];
      finish(unit);
      release(unit);
    }
    for (std::size_t i = 0; i < states_.size(); ++i) {
      if (states_[i] == State::kInFlight) finish(static_cast<int64_t>(i));
      release(static_cast<int64_t>(i));
    }
  } catch (const CollectiveError&) {
    throw;
  } catch (const std::exception& e) {
    throw CollectiveError(fmt::format(
        "{}: the rest of a pass's gathers of the split base could not be made, so the ranks "
        "are out of step: {}",
        group_.self(), e.what()));
  }
}

}  // namespace ftbench::dist
