#include "ftbench/data/data_from_spec.h"

namespace ftbench::data {

DataFileOptions data_file_options(const spec::DataSpec& data) {
  DataFileOptions o;
  o.path = data.path;
  o.format = data.format;
  o.train_on_input = data.train_on_prompt;
  o.max_tokens = data.seq_len;
  o.too_long = data.too_long;
  o.on_error = data.on_error;
  o.max_examples = data.max_examples;
  o.subset = data.subset;
  o.seed = data.seed;
  return o;
}

}  // namespace ftbench::data
