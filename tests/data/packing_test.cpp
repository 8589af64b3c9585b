#include "data/packing.h"

#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace ftbench::data {
namespace {

// Examples of the given lengths (token values do not matter to packing).
class Lengths final : public Dataset {
 public:
  explicit Lengths(const std::vector<int64_t>& lengths) {
    for (const int64_t n : lengths) {
      Example e;
      e.tokens.assign(static_cast<size_t>(n), 7);
      examples_.push_back(e);
    }
  }
  int64_t size() const override { return static_cast<int64_t>(examples_.size()); }
  const Example& at(int64_t i) const override { return examples_.at(static_cast<size_t>(i)); }
  std::string description() const override { return "lengths"; }

 private:
  std::vector<Example> examples_;
};

TEST(Packing, GreedyInDataSetOrder) {
  // 3 | 4 2 | 5 1 | 6 | 2 2 2: an example that does not fit whole starts a new row, and a
  // later short one never goes back to fill an earlier row.
  const Lengths d({3, 4, 2, 5, 1, 6, 2, 2, 2});
  const PackedRows p = pack_greedy(d, 6);
  EXPECT_EQ(p.offsets, (std::vector<int64_t>{0, 1, 3, 5, 6, 9}));
  EXPECT_EQ(p.items, (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8}));
  EXPECT_EQ(p.rows(), 5);
  EXPECT_EQ(rows_per_epoch(d, true, 6), 5);
  EXPECT_EQ(rows_per_epoch(d, false, 6), 9);
}

TEST(Packing, LongExamplesCountAsSeqLenAndEmptyDataHasNoRows) {
  // 10 is truncated to 6 and fills its row; 1 + 5 then share one.
  const PackedRows p = pack_greedy(Lengths({10, 1, 5, 1}), 6);
  EXPECT_EQ(p.offsets, (std::vector<int64_t>{0, 1, 3, 4}));
  EXPECT_EQ(pack_greedy(Lengths({}), 6).rows(), 0);
  EXPECT_THROW(pack_greedy(Lengths({1}), 0), std::invalid_argument);
}

}  // namespace
}  // namespace ftbench::data
