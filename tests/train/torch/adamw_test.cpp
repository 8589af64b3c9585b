// ftbench's AdamW against torch::optim::AdamW: on CPU the same operations in the same order, so
// the parameters must be equal bit for bit.
#include "train/torch/adamw.h"

#include <gtest/gtest.h>
#include <torch/optim/adamw.h>

namespace ftbench::train {
namespace {

std::vector<at::Tensor> make_params() {
  at::manual_seed(3);
  return {at::randn({4, 3}).requires_grad_(true), at::randn({7}).requires_grad_(true),
          at::randn({2, 2, 2}).requires_grad_(true)};
}

std::vector<at::Tensor> clones(const std::vector<at::Tensor>& params) {
  std::vector<at::Tensor> out;
  for (const at::Tensor& p : params) out.push_back(p.detach().clone().requires_grad_(true));
  return out;
}

// Gradients for step `step`; the second parameter has none at step 2 (skipped, as torch does).
void set_grads(std::vector<at::Tensor>& params, int step) {
  at::manual_seed(100 + step);
  for (size_t i = 0; i < params.size(); ++i) {
    params[i].mutable_grad() = (step == 2 && i == 1) ? at::Tensor() : at::randn_like(params[i]);
  }
}

TEST(AdamW, EqualsTorchOptimAdamWBitForBit) {
  for (const double weight_decay : {0.0, 0.01}) {
    const AdamWOptions o{3e-3, 0.9, 0.95, 1e-8, weight_decay};
    std::vector<at::Tensor> ours = make_params();
    std::vector<at::Tensor> theirs = clones(ours);
    AdamW adamw(ours, o);
    EXPECT_EQ(adamw.implementation(), "foreach");
    torch::optim::AdamW reference(theirs, torch::optim::AdamWOptions(o.lr)
                                              .betas({o.beta1, o.beta2})
                                              .eps(o.eps)
                                              .weight_decay(o.weight_decay));
    for (int step = 1; step <= 6; ++step) {
      const double lr = o.lr * step / 6.0;  // the schedule changes lr between steps
      adamw.set_lr(lr);
      for (auto& group : reference.param_groups()) {
        static_cast<torch::optim::AdamWOptions&>(group.options()).lr(lr);
      }
      set_grads(ours, step);
      set_grads(theirs, step);
      adamw.step();
      reference.step();
      for (size_t i = 0; i < ours.size(); ++i) {
        EXPECT_TRUE(at::equal(ours[i], theirs[i])) << "step " << step << " param " << i;
      }
    }
    EXPECT_EQ(adamw.param_steps(), (std::vector<int64_t>{6, 5, 6}));
  }
}

// Restoring the state (moments and step count) into a new optimizer continues the same run.
TEST(AdamW, RestoredStateContinuesTheSameRun) {
  const AdamWOptions o{1e-2, 0.9, 0.999, 1e-8, 0.1};
  std::vector<at::Tensor> a = make_params();
  AdamW first(a, o);
  for (int step = 1; step <= 3; ++step) {
    set_grads(a, step);
    first.step();
  }
  std::vector<at::Tensor> b = clones(a);
  AdamW second(b, o);
  second.set_param_steps(first.param_steps());
  for (size_t i = 0; i < a.size(); ++i) {
    second.exp_avg()[i].copy_(first.exp_avg()[i]);
    second.exp_avg_sq()[i].copy_(first.exp_avg_sq()[i]);
  }
  for (int step = 4; step <= 5; ++step) {
    set_grads(a, step);
    set_grads(b, step);
    first.step();
    second.step();
  }
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(at::equal(a[i], b[i])) << i;
  first.zero_grad();
  for (const at::Tensor& p : a) EXPECT_FALSE(p.grad().defined());
  EXPECT_THROW(second.set_param_steps({1, -1, 1}), std::invalid_argument);
  EXPECT_THROW(second.set_param_steps({1}), std::invalid_argument);
  EXPECT_THROW(AdamW({at::zeros({2}, at::kLong)}, o), std::invalid_argument);
}

}  // namespace
}  // namespace ftbench::train
