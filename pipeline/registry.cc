#include "pipeline/registry.hh"

#include <algorithm>
#include <map>

#include "bitshuffle/bitshuffle.hh"
#include "fusions/lorenzo_pack.hh"
#include "lossless/zeroblock/shuffle_pack.hh"
#include "lossless/zeroblock/zeroblock.hh"
#include "pipeline/fusion.hh"
#include "pipeline/error.hh"
#include "predictors/lorenzo/lorenzo.hh"

namespace fzg {

namespace {
const std::map<std::string, StageFactory>& factories() {
  static const std::map<std::string, StageFactory> table = {
      {"lorenzo", make_lorenzo_stage},
      {"bitshuffle", make_bitshuffle_stage},
      {"zero-block", make_zeroblock_stage},
  };
  return table;
}
}  // namespace

std::unique_ptr<Stage> make_stage(const std::string& type, const nlohmann::json& params) {
  auto it = factories().find(type);
  if (it == factories().end()) {
    std::string known;
    for (const auto& name : stage_types()) known += (known.empty() ? "" : ", ") + name;
    fail(ErrorCode::invalid_config, "unknown stage type '" + type + "' (known: " + known + ")");
  }
  if (!params.is_object()) fail(ErrorCode::invalid_config, "stage '" + type + "': \"params\" must be an object");
  return it->second(params);
}

const Fusion* find_fusion(const GraphNode& first, const GraphNode& second, Device device) {
  static const std::vector<std::unique_ptr<Fusion>> table = [] {
    std::vector<std::unique_ptr<Fusion>> t;
    t.push_back(make_shuffle_pack_fusion());
    return t;
  }();
  for (const auto& fusion : table)
    if (fusion->matches(first, second, device)) return fusion.get();
  return nullptr;
}

namespace {
const std::vector<std::unique_ptr<ChainFusion>>& chain_fusions() {
  static const std::vector<std::unique_ptr<ChainFusion>> table = [] {
    std::vector<std::unique_ptr<ChainFusion>> t;
    t.push_back(make_lorenzo_pack_chain());
    return t;
  }();
  return table;
}
}  // namespace

const ChainFusion* find_chain_starting(const Graph& graph, size_t first, Device device) {
  for (const auto& chain : chain_fusions())
    if (first + chain->length() <= graph.nodes().size() && chain->matches(graph, first, device)) return chain.get();
  return nullptr;
}

const ChainFusion* find_chain_ending(const Graph& graph, size_t last, Device device) {
  for (const auto& chain : chain_fusions())
    if (chain->length() <= last + 1 && chain->matches(graph, last + 1 - chain->length(), device)) return chain.get();
  return nullptr;
}

std::vector<std::string> stage_types() {
  std::vector<std::string> names;
  for (const auto& entry : factories()) names.push_back(entry.first);
  return names;
}

std::string to_string(PortType t) {
  switch (t) {
    case PortType::field: return "field";
    case PortType::codes_u16: return "codes_u16";
    case PortType::bytes: return "bytes";
  }
  return "?";
}

StageParams::StageParams(std::string stage_type, const nlohmann::json& params)
    : stage_type_(std::move(stage_type)), params_(params.is_null() ? nlohmann::json::object() : params) {}

const nlohmann::json* StageParams::find(const std::string& key) {
  read_.push_back(key);
  return params_.contains(key) ? &params_.at(key) : nullptr;
}

void StageParams::reject(const std::string& key, const std::string& what) const {
  fail(ErrorCode::invalid_config, "stage '" + stage_type_ + "': parameter \"" + key + "\" " + what);
}

int64_t StageParams::checked_integer(const std::string& key, const nlohmann::json& value, int64_t min,
                                     int64_t max) const {
  if (!value.is_number_integer()) reject(key, "must be an integer");
  const int64_t v = value.get<int64_t>();
  if (v < min || v > max)
    reject(key, "= " + std::to_string(v) + " is out of range [" + std::to_string(min) + ", " + std::to_string(max) + "]");
  return v;
}

int64_t StageParams::integer(const std::string& key, int64_t fallback, int64_t min, int64_t max) {
  const nlohmann::json* value = find(key);
  return value ? checked_integer(key, *value, min, max) : fallback;
}

bool StageParams::boolean(const std::string& key, bool fallback) {
  const nlohmann::json* value = find(key);
  if (!value) return fallback;
  if (!value->is_boolean()) reject(key, "must be true or false");
  return value->get<bool>();
}

std::string StageParams::text(const std::string& key, const std::string& fallback) {
  const nlohmann::json* value = find(key);
  if (!value) return fallback;
  if (!value->is_string()) reject(key, "must be a string");
  return value->get<std::string>();
}

std::string StageParams::choice(const std::string& key, const std::string& fallback,
                                const std::vector<std::string>& choices) {
  const std::string v = text(key, fallback);
  if (std::find(choices.begin(), choices.end(), v) != choices.end()) return v;
  std::string listed;
  for (const auto& c : choices) listed += (listed.empty() ? "" : ", ") + c;
  reject(key, "= \"" + v + "\" is not one of " + listed);
}

std::vector<int64_t> StageParams::integers(const std::string& key, const std::vector<int64_t>& fallback, int64_t min,
                                           int64_t max) {
  const nlohmann::json* value = find(key);
  if (!value) return fallback;
  if (!value->is_array()) reject(key, "must be a list of integers");
  std::vector<int64_t> out;
  for (size_t i = 0; i < value->size(); ++i)
    out.push_back(checked_integer(key + "[" + std::to_string(i) + "]", value->at(i), min, max));
  return out;
}

void StageParams::finish() const {
  for (const auto& item : params_.items()) {
    bool known = false;
    for (const auto& key : read_) known = known || key == item.key();
    if (!known) fail(ErrorCode::invalid_config, "stage '" + stage_type_ + "': unknown parameter \"" + item.key() + "\"");
  }
}

}  // namespace fzg
