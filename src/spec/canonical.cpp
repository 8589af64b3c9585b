#include "spec/canonical.h"

#include <memory>
#include <optional>
#include <stdexcept>

#include "spec/choices.h"
#include "spec/spec_fields.h"
#include "util/io/sha256.h"

namespace ftbench::spec {

namespace {

// Writes the fields visit_fields() names into a JSON object, in their order.
template <class Json>
struct JsonWriter {
  Json& out;

  template <class T>
  void field(const char* name, const T& value) {
    out[name] = value;
  }
  void field(const char* name, const std::optional<double>& value) {
    if (value) {
      out[name] = *value;
    } else {
      out[name] = nullptr;
    }
  }
  void field(const char* name, const std::optional<RopeScaling>& value) {
    if (value) {
      out[name] = object_of(*value);
    } else {
      out[name] = nullptr;
    }
  }
  void field(const char* name, const CheckpointSpec& value) { out[name] = object_of(value); }
  template <class S>
  void section(const char* name, const S& value) {
    out[name] = object_of(value);
  }

  template <class S>
  static Json object_of(const S& value) {
    Json j = Json::object();
    JsonWriter<Json> writer{j};
    visit_fields(writer, value);
    return j;
  }
};

// One builder for both JSON flavours so that the report's ordered view and the hashed sorted
// view can never disagree on a value. Key order is the documented order (spec_fields.h);
// nlohmann::json re-sorts it for the canonical form.
template <class Json>
Json build_json(const RunSpec& spec) {
  Json j = Json::object();
  JsonWriter<Json> writer{j};
  visit_sections(writer, spec);
  j["source_path"] = spec.source_path;
  return j;
}

}  // namespace

nlohmann::ordered_json to_json(const RunSpec& spec) {
  return build_json<nlohmann::ordered_json>(spec);
}

std::string canonical_job_json(const RunSpec& spec) {
  nlohmann::json j = build_json<nlohmann::json>(spec);
  // Left out: where the report goes and how progress is shown (output), which machine and how
  // many threads run it (backend), how many processes share it (distributed), and where the spec
  // file lives (source_path). Two runs of the same job on different clouds must hash the same so
  // that `compare` can pair them.
  j.erase("output");
  j.erase("backend");
  j.erase("distributed");
  j.erase("source_path");
  // Where the data file and the tokenizer live differs between machines; what they hold is in the
  // report's data fingerprint (token ids and loss masks), which compare checks as well.
  j["data"].erase("path");
  // The same holds for the checkpoint folder: the shape it gives is in the model keys, and what
  // its tensors hold is the report's weights fingerprint. Whether the weights are random or
  // loaded is part of the job (the losses differ). The hashed form keeps the two keys that were
  // reserved for this before model.checkpoint existed, at the values they then had for random
  // weights, so fingerprints of earlier reports and checkpoints stay valid.
  j["model"]["init"] = spec.model.checkpoint.empty() ? "random" : "checkpoint";
  j["model"]["checkpoint_path"] = "";
  j["model"].erase("checkpoint");
  j["data"].erase("tokenizer");
  j["data"].erase("validation_path");
  // What to do on out of memory changes how the job runs, not what it computes (the effective
  // batch and each step's examples stay); a fallback that happened is in the report's
  // `batching`, which compare flags. Left out, the fingerprints of reports written before these
  // keys existed stay valid.
  j["train"].erase("oom_fallback");
  j["train"].erase("oom_max_fallbacks");
  // When and where checkpoints are saved does not change what the job computes; resuming
  // checks this fingerprint, so a run may resume under another checkpoint policy.
  j["train"].erase("checkpoint");
  // model.activation_checkpointing was a bool before the policies: full and none are hashed as
  // true and false were, so fingerprints of earlier reports and checkpoints stay valid.
  const std::string& policy = spec.model.activation_checkpointing;
  if (policy == choice::checkpointing::kFull || policy == choice::checkpointing::kNone) {
    j["model"]["activation_checkpointing"] = policy == choice::checkpointing::kFull;
  }
  // Compact (no whitespace); invalid UTF-8 in a user string is replaced rather than thrown so
  // that any spec that loaded can be hashed.
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string fingerprint(const RunSpec& spec) { return io::sha256_hex(canonical_job_json(spec)); }

}  // namespace ftbench::spec
