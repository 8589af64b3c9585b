#include "train/oom_fallback.h"

#include <stdexcept>
#include <string>

#include <gtest/gtest.h>

namespace ftbench::train {
namespace {

MicroBatching mb(int64_t size, int64_t accum) { return {size, accum}; }

TEST(OomFallback, EvenMicroBatchesAreHalvedAndAccumulationDoubled) {
  EXPECT_EQ(fallback_micro_batching(mb(4, 4)), mb(2, 8));  // the MI300X run of FIELD.md
  EXPECT_EQ(fallback_micro_batching(mb(2, 8)), mb(1, 16));
  EXPECT_EQ(fallback_micro_batching(mb(16, 1)), mb(8, 2));
  EXPECT_EQ(fallback_micro_batching(mb(6, 1)), mb(3, 2));
}

TEST(OomFallback, OddMicroBatchesTakeTheLargestDivisorAtMostTheirRoundedUpHalf) {
  EXPECT_EQ(fallback_micro_batching(mb(3, 4)), mb(2, 6));  // 2 divides 12
  EXPECT_EQ(fallback_micro_batching(mb(3, 3)), mb(1, 9));  // 2 does not divide 9
  EXPECT_EQ(fallback_micro_batching(mb(5, 2)), mb(2, 5));  // 3 does not divide 10
  EXPECT_EQ(fallback_micro_batching(mb(7, 1)), mb(1, 7));  // a prime effective batch
  EXPECT_EQ(fallback_micro_batching(mb(9, 2)), mb(3, 6));  // 5 and 4 do not divide 18
}

TEST(OomFallback, KeepsTheEffectiveBatchAndShrinksEveryTimeDownToOne) {
  for (int64_t size = 1; size <= 64; ++size) {
    for (int64_t accum = 1; accum <= 8; ++accum) {
      MicroBatching m = mb(size, accum);
      int64_t fallbacks = 0;
      while (const auto next = fallback_micro_batching(m)) {
        EXPECT_EQ(next->effective_batch(), size * accum);
        EXPECT_LT(next->micro_batch_size, m.micro_batch_size);
        EXPECT_EQ(next->effective_batch() % next->micro_batch_size, 0);
        m = *next;
        ++fallbacks;
      }
      EXPECT_EQ(m.micro_batch_size, 1);
      EXPECT_LE(fallbacks, 7) << size << " x " << accum;  // about log2(size) halvings
    }
  }
  EXPECT_FALSE(fallback_micro_batching(mb(1, 16)).has_value());
}

TEST(OomFallback, RecognisesTheOutOfMemoryMessagesOfEachBackend) {
  EXPECT_TRUE(is_out_of_memory_message(
      "CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 79.15 GiB total capacity)"));
  EXPECT_TRUE(is_out_of_memory_message("HIP out of memory. Tried to allocate 1.50 GiB"));
  EXPECT_TRUE(is_out_of_memory_message(
      "[enforce fail at alloc_cpu.cpp:75] . DefaultCPUAllocator: can't allocate memory: you "
      "tried to allocate 1125899906842624 bytes. Error code 12 (Cannot allocate memory)"));
  EXPECT_TRUE(is_out_of_memory_message("CUDA error: OUT OF MEMORY"));
  EXPECT_FALSE(is_out_of_memory_message("mat1 and mat2 shapes cannot be multiplied (4x8 and 4x8)"));
  EXPECT_FALSE(is_out_of_memory_message("CUDA error: an illegal memory access was encountered"));
  EXPECT_FALSE(is_out_of_memory_message(""));
  // LibTorch builds an enforce message in a string stream, which stops writing when it cannot
  // allocate: under `ulimit -v 799000` on Debian 13 (LibTorch 2.6) the CPU allocator's message
  // arrived as "[enforce fail a". Cut before the location's "]", it can only have been cut for
  // want of memory; a whole enforce message is read for what it says.
  EXPECT_TRUE(is_out_of_memory_message("[enforce fail a"));
  EXPECT_TRUE(is_out_of_memory_message("[enforce fail at alloc_cpu.cpp:7"));
  EXPECT_FALSE(is_out_of_memory_message("[enforce fail at tensor.cpp:12] . index out of range"));
}

OomSiteState forward(int64_t step, int64_t micro_batch, int64_t micro_step = 0,
                     int64_t tokens = 0) {
  return {OomSite::kForward, step, micro_batch, micro_step, tokens};
}

TEST(OomInjection, MicroBatchRuleFiresUntilTheMicroBatchIsSmallEnough) {
  const OomInjection rule = OomInjection::parse("micro_batch>2");
  EXPECT_EQ(rule.rule(), "micro_batch>2");
  EXPECT_TRUE(rule.matches(forward(1, 4)));
  EXPECT_TRUE(rule.matches(forward(7, 3)));
  EXPECT_FALSE(rule.matches(forward(1, 2)));
  EXPECT_FALSE(rule.matches({OomSite::kUpdate, 1, 4, 0, 0}));  // at=forward by default
}

TEST(OomInjection, EveryConditionMustHold) {
  const OomInjection rule = OomInjection::parse(" step = 3 , micro_batch>=4,micro_step=1 ");
  EXPECT_TRUE(rule.matches(forward(3, 4, 1)));
  EXPECT_FALSE(rule.matches(forward(3, 4, 0)));
  EXPECT_FALSE(rule.matches(forward(2, 4, 1)));
  EXPECT_FALSE(rule.matches(forward(3, 2, 1)));
  const OomInjection tokens = OomInjection::parse("tokens>256,step<=2");
  EXPECT_TRUE(tokens.matches(forward(2, 4, 0, 257)));
  EXPECT_FALSE(tokens.matches(forward(2, 4, 0, 256)));
  EXPECT_FALSE(tokens.matches(forward(3, 4, 0, 512)));
  const OomInjection update = OomInjection::parse("at=update,step>=2");
  EXPECT_TRUE(update.matches({OomSite::kUpdate, 2, 1, 0, 0}));
  EXPECT_FALSE(update.matches({OomSite::kUpdate, 1, 1, 0, 0}));
  EXPECT_FALSE(update.matches(forward(2, 1)));
}

TEST(OomInjection, BadRulesNameTheCondition) {
  auto message = [](const std::string& rule) {
    try {
      OomInjection::parse(rule);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message(""), "empty rule");
  EXPECT_EQ(message("batch>2"),
            "\"batch>2\": unknown key \"batch\" (expected step, micro_batch, micro_step, tokens "
            "or at)");
  EXPECT_EQ(message("micro_batch=>2"),
            "\"micro_batch=>2\": unknown operator \"=>\" (expected >, >=, <, <=, =)");
  EXPECT_EQ(message("micro_batch>two"), "\"micro_batch>two\": expected an integer after \">\"");
  EXPECT_EQ(message("step>1,,"),
            "\"\": expected KEY OP NUMBER (KEY: step, micro_batch, micro_step, tokens; OP: >, "
            ">=, <, <=, =) or at=forward|update");
  EXPECT_EQ(message("at=backward"), "\"at=backward\": expected at=forward or at=update");
  EXPECT_EQ(message("at=update,tokens>5"),
            "\"at=update,tokens>5\": micro_step and tokens apply to at=forward only");
}

}  // namespace
}  // namespace ftbench::train
