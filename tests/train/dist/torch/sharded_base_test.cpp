// A frozen base split across 2 and 4 ranks (threads of this process over one HashStore, Gloo on
// 127.0.0.1) against the same model held whole: the forward is bit for bit the whole model's,
// the adapters' gradients agree within fp32 tolerance (in practice bit for bit), each block is
// gathered exactly twice in a training pass and once in a forward, and no unit stays whole.
// Both backward schemes (recomputed with activation checkpointing, the saved graph without),
// tied and untied embeddings, a head with and without an adapter.
#include "train/dist/torch/sharded_base.h"

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/utils.h>

#include "../../../model/torch/small_model.h"
#include "model/torch/llama.h"
#include "thread_ranks.h"

namespace ftbench::dist {
namespace {

using model::GatherPass;
using model::Llama;
using testing::run_ranks;

struct Shape {
  bool tied = false;
  bool checkpointing = false;
  bool head_adapter = false;
  bool block_adapters = true;
};

std::string name_of(const Shape& s) {
  return std::string(s.tied ? "tied" : "untied") + (s.checkpointing ? "_recomputed" : "_saved") +
         (s.head_adapter ? "_head_adapter" : "_frozen_head") +
         (s.block_adapters ? "" : "_frozen_blocks");
}

spec::ModelSpec model_of(const Shape& s) {
  spec::ModelSpec m = model::testing::small_model();
  m.tie_embeddings = s.tied;
  m.activation_checkpointing = s.checkpointing ? "full" : "none";
  return m;
}

spec::LoraSpec lora_of(const Shape& s) {
  spec::LoraSpec l = model::testing::all_targets(4);
  l.targets.clear();
  if (s.block_adapters) l.targets = {"q", "k", "v", "o", "gate", "up", "down"};
  if (s.head_adapter) l.targets.push_back("output");
  return l;
}

constexpr int64_t kPositions = 16;

// The whole model: seeded base, and adapters with B non-zero so that every adapter gets a
// gradient.
Llama whole_model(const Shape& s) {
  at::manual_seed(11);
  Llama m(model_of(s), lora_of(s), kPositions, at::kCPU);
  m->init_random();
  torch::NoGradGuard no_grad;
  for (at::Tensor& p : m->trainable_parameters()) p.uniform_(-0.2, 0.2);
  return m;
}

std::map<std::string, at::Tensor> parameters_of(Llama& m) {
  std::map<std::string, at::Tensor> out;
  for (const auto& p : m->named_parameters()) out[p.key()] = p.value();
  return out;
}

// A model laid out for `group`'s ranks holding `whole`'s values, each unit's slice kept.
struct SplitModel {
  SplitModel(const Shape& s, Communicator& group, const std::map<std::string, at::Tensor>& whole)
      : model(model_of(s), lora_of(s), kPositions, at::kCPU, group.size()),
        base(group, model->base_units()) {
    torch::NoGradGuard no_grad;
    for (model::BaseUnit& unit : model->base_units()) unit.allocate();
    for (const auto& p : model->named_parameters()) p.value().copy_(whole.at(p.key()));
    for (std::size_t u = 0; u < model->base_units().size(); ++u) {
      base.keep_shard(static_cast<int64_t>(u));
    }
    model->set_base_gathers(&base);
  }
  Llama model;
  ShardedBase base;
};

struct Batch {
  at::Tensor ids;
  at::Tensor labels;
};

Batch batch() {
  at::manual_seed(5);
  Batch b;
  b.ids = at::randint(0, model::testing::small_model().vocab_size, {2, 12}, at::kLong);
  b.labels = b.ids.roll(-1, 1);
  b.labels.narrow(1, 0, 3).fill_(-100);  // a prompt without loss
  return b;
}

// The whole model of `shape`, its values, the batch and its logits: what the ranks of a split
// base must end up computing.
struct WholeForward {
  explicit WholeForward(const Shape& shape) : model(whole_model(shape)) {
    values = parameters_of(model);
    model->eval();
    torch::NoGradGuard no_grad;
    logits = model->forward(batch.ids);
  }
  Llama model;
  std::map<std::string, at::Tensor> values;
  Batch batch = ::ftbench::dist::batch();
  at::Tensor logits;
};

class SplitBase : public ::testing::TestWithParam<std::tuple<int64_t, Shape>> {
 protected:
  void SetUp() override { at::set_num_threads(1); }
};

TEST_P(SplitBase, ForwardIsBitwiseTheWholeModelsAndBackwardAgrees) {
  const auto [ranks, shape] = GetParam();
  Llama whole = whole_model(shape);
  const std::map<std::string, at::Tensor> values = parameters_of(whole);
  const Batch b = batch();

  // The whole model's logits, loss and adapter gradients.
  whole->eval();
  at::Tensor want_logits;
  {
    torch::NoGradGuard no_grad;
    want_logits = whole->forward(b.ids);
  }
  whole->train();
  std::vector<std::pair<std::string, at::Tensor>> adapters = whole->trainable_named_parameters();
  const at::Tensor want_loss = whole->loss_sum(b.ids, b.labels);
  want_loss.backward();

  const int64_t n_layers = model_of(shape).n_layers;
  std::mutex mutex;
  std::vector<std::string> failures;
  auto fail = [&](int64_t rank, const std::string& what) {
    std::lock_guard<std::mutex> lock(mutex);
    failures.push_back("rank " + std::to_string(rank) + ": " + what);
  };
  run_ranks(ranks, [&](Communicator& c) {
    SplitModel split(shape, c, values);
    Llama& m = split.model;
    const std::vector<model::BaseUnit>& units = m->base_units();

    m->eval();
    {
      torch::NoGradGuard no_grad;
      if (!at::equal(m->forward(b.ids), want_logits)) fail(c.rank(), "forward logits differ");
    }
    // A forward: every unit once (a tied head is the embedding's unit again).
    const int64_t forward_gathers = n_layers + 2;
    if (split.base.stats().calls != forward_gathers) {
      fail(c.rank(), "forward made " + std::to_string(split.base.stats().calls) + " gathers");
    }

    m->train();
    std::vector<std::pair<std::string, at::Tensor>> mine = m->trainable_named_parameters();
    const at::Tensor loss = m->loss_sum(b.ids, b.labels);
    loss.backward();
    if (!at::equal(loss, want_loss)) fail(c.rank(), "training loss differs");
    // Training: every block twice (forward, backward; once without adapters), the embedding
    // once, the head once, or twice with an adapter (its backward needs its weight).
    const int64_t training_gathers =
        (shape.block_adapters ? 2 : 1) * n_layers + 2 + (shape.head_adapter ? 1 : 0);
    const int64_t made = split.base.stats().calls - forward_gathers;
    if (made != training_gathers) {
      fail(c.rank(), "training made " + std::to_string(made) + " gathers, want " +
                         std::to_string(training_gathers));
    }
    for (std::size_t i = 0; i < mine.size(); ++i) {
      const at::Tensor& want = adapters[i].second.grad();
      const at::Tensor& got = mine[i].second.grad();
      if (!got.defined()) {
        fail(c.rank(), mine[i].first + " has no gradient");
        continue;
      }
      const double scale = want.abs().max().item<double>();
      const double diff = model::testing::max_abs_diff(got, want);
      if (scale == 0.0 || diff > 1e-6 * scale) {
        fail(c.rank(), mine[i].first + ": gradient differs by " + std::to_string(diff) +
                           " (largest " + std::to_string(scale) + ")");
      }
    }
    for (std::size_t u = 0; u < units.size(); ++u) {
      if (units[u].whole()) fail(c.rank(), "unit " + std::to_string(u) + " is still whole");
    }
  });
  for (const std::string& f : failures) ADD_FAILURE() << f;
}

std::vector<Shape> shapes() {
  std::vector<Shape> out;
  for (const bool tied : {false, true}) {
    for (const bool checkpointing : {false, true}) {
      for (const bool head_adapter : {false, true}) {
        out.push_back({tied, checkpointing, head_adapter});
      }
    }
    // Adapters on the head only: the blocks need no backward, so are gathered once.
    out.push_back({tied, false, true, false});
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(RanksAndShapes, SplitBase,
                         ::testing::Combine(::testing::Values(2, 4), ::testing::ValuesIn(shapes())),
                         [](const ::testing::TestParamInfo<std::tuple<int64_t, Shape>>& info) {
                           return std::to_string(std::get<0>(info.param)) + "_ranks_" +
                                  name_of(std::get<1>(info.param));
                         });

// A rank that stops after a forward (out of memory before its backward) makes the rest of the
// step's gathers without computing: its peer, which trains two micro-batches, is never left
// waiting, and both are back in step for the next pass.
TEST(SplitBase, ARankThatStopsPartWayKeepsItsPeersGathersMet) {
  at::set_num_threads(1);
  const Shape shape{};
  const WholeForward whole(shape);
  const std::map<std::string, at::Tensor>& values = whole.values;
  const Batch& b = whole.batch;
  const at::Tensor& want = whole.logits;
  std::vector<int> same(2, 0);
  run_ranks(2, [&](Communicator& c) {
    SplitModel split(shape, c, values);
    Llama& m = split.model;
    m->train();
    m->trainable_named_parameters();
    if (c.rank() == 1) {
      (void)m->loss_sum(b.ids, b.labels);  // the forward, then "out of memory"
      m->complete_training_passes(1);      // the rest of this pass and the step's second one
    } else {
      for (int i = 0; i < 2; ++i) m->loss_sum(b.ids, b.labels).backward();
    }
    m->eval();
    torch::NoGradGuard no_grad;
    same[static_cast<std::size_t>(c.rank())] = at::equal(m->forward(b.ids), want) ? 1 : 0;
  });
  EXPECT_EQ(same, (std::vector<int>{1, 1}));
}

// A rank whose gather cannot be given memory (out of memory: the first unit of a pass, never
// prefetched, or a unit being prefetched) makes the rest of the pass's gathers in the order
// its peer makes them: both end in step, the failed unit included.
TEST(SplitBase, AGatherThatRunsOutOfMemoryStillMeetsItsPeers) {
  at::set_num_threads(1);
  const Shape shape{};
  const WholeForward whole(shape);
  const std::map<std::string, at::Tensor>& values = whole.values;
  const Batch& b = whole.batch;
  const at::Tensor& want = whole.logits;
  // (unit, which of its allocations fails): the embedding of the second pass; block 1, as the
  // prefetch during block 0's gather in the first.
  for (const auto& [failing_unit, failing_time] : {std::pair<int64_t, int>{0, 2}, {2, 1}}) {
    std::vector<int> same(2, 0);
    std::vector<int> threw(2, 0);
    run_ranks(2, [&, failing_unit = failing_unit, failing_time = failing_time](Communicator& c) {
      SplitModel split(shape, c, values);
      Llama& m = split.model;
      int allocations = 0;
      if (c.rank() == 1) {
        split.base.set_before_allocate([&](int64_t unit) {
          if (unit == failing_unit && ++allocations == failing_time) {
            throw c10::OutOfMemoryError({__func__, __FILE__, __LINE__}, "simulated");
          }
        });
      }
      m->train();
      m->trainable_named_parameters();
      for (int pass = 0; pass < 2; ++pass) {
        try {
          m->loss_sum(b.ids, b.labels).backward();
        } catch (const c10::OutOfMemoryError&) {
          threw[static_cast<std::size_t>(c.rank())] = 1;
          m->complete_training_passes(1 - pass);
          break;
        }
      }
      m->eval();
      torch::NoGradGuard no_grad;
      same[static_cast<std::size_t>(c.rank())] = at::equal(m->forward(b.ids), want) ? 1 : 0;
    });
    EXPECT_EQ(threw, (std::vector<int>{0, 1})) << "unit " << failing_unit;
    EXPECT_EQ(same, (std::vector<int>{1, 1})) << "unit " << failing_unit;
  }
}

// A gather out of the pass's order is refused, never left to meet another unit's gather.
TEST(SplitBase, AGatherOutOfThePasssOrderIsRefused) {
  Communicator one;
  Llama whole = whole_model({});
  SplitModel split({}, one, parameters_of(whole));
  split.base.begin_pass({0, 1, 2});
  try {
    split.base.gather(1);
    ADD_FAILURE() << "gather(1) was accepted";
  } catch (const std::logic_error& e) {
    EXPECT_EQ(std::string(e.what()), "ShardedBase: gather of unit 1 where the pass expects unit 0");
  }
  split.base.gather(0);
  EXPECT_THROW(split.base.begin_pass({0}), std::logic_error);  // this pass is not over
  split.base.release(0);
  split.base.complete_pass();
  for (const model::BaseUnit& u : split.model->base_units()) EXPECT_FALSE(u.whole());
  split.base.begin_pass({3});
  split.base.gather(3);  // the untied head
  EXPECT_TRUE(split.model->base_units()[3].whole());
  split.base.release(3);
  EXPECT_FALSE(split.model->base_units()[3].whole());
  EXPECT_EQ(split.base.stats().calls, 4);  // units 0, 1, 2 and 3
}

// init_random() of a split base fills unit after unit in the order a whole base draws its values:
// every weight and adapter is bit for bit the whole model's, and the base is never whole at once.
TEST(SplitBase, RandomInitOfASplitBaseDrawsTheWholeBasesValues) {
  for (const bool tied : {false, true}) {
    Shape s;
    s.tied = tied;
    s.head_adapter = true;
    at::manual_seed(3);
    Llama whole(model_of(s), lora_of(s), kPositions, at::kCPU);
    whole->init_random();
    at::manual_seed(3);
    Llama split(model_of(s), lora_of(s), kPositions, at::kCPU, 2);
    std::map<const void*, at::Tensor> filled;  // by TensorImpl: the module's own parameters
    int whole_at_once = 0;
    split->init_random([&](int64_t unit) {
      int whole_units = 0;
      for (const model::BaseUnit& u : split->base_units()) whole_units += u.whole() ? 1 : 0;
      whole_at_once = std::max(whole_at_once, whole_units);
      model::BaseUnit& u = split->base_units()[static_cast<std::size_t>(unit)];
      for (const at::Tensor& t : u.tensors()) filled[t.unsafeGetTensorImpl()] = t.clone();
      u.free();
    });
    EXPECT_EQ(whole_at_once, 1);
    const std::map<std::string, at::Tensor> want = parameters_of(whole);
    for (const auto& p : split->named_parameters()) {
      const auto f = filled.find(p.value().unsafeGetTensorImpl());
      const at::Tensor got = f != filled.end() ? f->second : p.value();
      EXPECT_TRUE(at::equal(got, want.at(p.key()))) << p.key() << (tied ? " (tied)" : "");
    }
  }
}

}  // namespace
}  // namespace ftbench::dist
