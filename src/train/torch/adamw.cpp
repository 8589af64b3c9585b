#include "train/torch/adamw.h"

#include <cmath>
#include <map>
#include <stdexcept>
#include <utility>

#include <ATen/core/grad_mode.h>  // at::NoGradGuard, not reached through <ATen/ATen.h> in 2.6

#include "model/torch/sdpa.h"  // FTBENCH_TORCH_AT_LEAST

namespace ftbench::train {

AdamW::AdamW(std::vector<at::Tensor> params, AdamWOptions options)
    : params_(std::move(params)), options_(options) {
  for (const at::Tensor& p : params_) {
    if (!p.is_floating_point()) throw std::invalid_argument("AdamW: a parameter is not floating");
    if (p.device() != params_.front().device()) {
      throw std::invalid_argument("AdamW: parameters on more than one device");
    }
    exp_avg_.push_back(at::zeros_like(p, at::MemoryFormat::Preserve));
    exp_avg_sq_.push_back(at::zeros_like(p, at::MemoryFormat::Preserve));
    param_steps_.push_back(0);
  }
  implementation_ = "foreach";
#if FTBENCH_TORCH_AT_LEAST(2, 1)
  if (!params_.empty() && params_.front().is_cuda()) {
    implementation_ = "fused";
    for (const at::Tensor& p : params_) {
      state_steps_.push_back(at::zeros({}, p.options().dtype(at::kFloat)));
    }
  }
#endif
}

void AdamW::set_param_steps(const std::vector<int64_t>& steps) {
  if (steps.size() != params_.size()) {
    throw std::invalid_argument("AdamW: one step count per parameter expected");
  }
  for (size_t i = 0; i < steps.size(); ++i) {
    if (steps[i] < 0) throw std::invalid_argument("AdamW: negative step count");
    param_steps_[i] = steps[i];
    if (!state_steps_.empty()) state_steps_[i].fill_(static_cast<double>(steps[i]));
  }
}

void AdamW::step() {
  at::NoGradGuard no_grad;
  const AdamWOptions& o = options_;
  // The parameters with a gradient, grouped by their step count after this update (one group
  // unless some parameter went without a gradient before).
  std::map<int64_t, std::vector<size_t>> groups;
  for (size_t i = 0; i < params_.size(); ++i) {
    if (params_[i].grad().defined()) groups[++param_steps_[i]].push_back(i);
  }
  for (const auto& [count, members] : groups) {
    std::vector<at::Tensor> params, grads, exp_avg, exp_avg_sq, state_steps;
    for (const size_t i : members) {
      params.push_back(params_[i]);
      grads.push_back(params_[i].grad());
      exp_avg.push_back(exp_avg_[i]);
      exp_avg_sq.push_back(exp_avg_sq_[i]);
      if (!state_steps_.empty()) state_steps.push_back(state_steps_[i]);
    }
#if FTBENCH_TORCH_AT_LEAST(2, 1)
    if (implementation_ == "fused") {
      // The kernel reads each step count from its device scalar; adamw.py adds one first.
      at::_foreach_add_(state_steps, 1);
      at::_fused_adamw_(params, grads, exp_avg, exp_avg_sq, /*max_exp_avg_sqs=*/{}, state_steps,
                        o.lr, o.beta1, o.beta2, o.weight_decay, o.eps, /*amsgrad=*/false,
                        /*maximize=*/false);
      continue;
    }
#endif
    // torch::optim::AdamW::step's operations, one multi-tensor op each.
    const double t = static_cast<double>(count);
    const double bias_correction1 = 1.0 - std::pow(o.beta1, t);
    const double bias_correction2 = 1.0 - std::pow(o.beta2, t);
    if (o.weight_decay != 0.0) at::_foreach_mul_(params, 1.0 - o.lr * o.weight_decay);
    at::_foreach_mul_(exp_avg, o.beta1);
    at::_foreach_add_(exp_avg, grads, 1.0 - o.beta1);
    at::_foreach_mul_(exp_avg_sq, o.beta2);
    at::_foreach_addcmul_(exp_avg_sq, grads, grads, 1.0 - o.beta2);
    std::vector<at::Tensor> denom = at::_foreach_sqrt(exp_avg_sq);
    at::_foreach_div_(denom, std::sqrt(bias_correction2));
    at::_foreach_add_(denom, o.eps);
    at::_foreach_addcdiv_(params, exp_avg, denom, -o.lr / bias_correction1);
  }
}

void AdamW::zero_grad() {
  for (at::Tensor& p : params_) p.mutable_grad() = at::Tensor();
}

}  // namespace ftbench::train
