#include "core/registry.hh"

#include <algorithm>
#include <map>

#include "bitshuffle/bitshuffle.hh"
#include "core/error.hh"
#include "fusions/shuffle_pack/shuffle_pack.hh"
#include "lossless/gpulz/gpulz.hh"
#include "lossless/huffman/huffman.hh"
#include "lossless/zeroblock/zeroblock.hh"
#include "predictors/lorenzo/lorenzo.hh"

namespace fzg {

namespace {
const std::map<std::string, StageFactory>& factories() {
  static const std::map<std::string, StageFactory> table = {
      {"lorenzo", make_lorenzo_stage},
      {"bitshuffle", make_bitshuffle_stage},
      {"zero-block", make_zeroblock_stage},
      {"gpulz", make_gpulz_stage},
      {"huffman", make_huffman_stage},
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

const Composite* find_composite(FusionRole first, FusionRole second, Device device) {
  static const std::vector<std::unique_ptr<Composite>> table = [] {
    std::vector<std::unique_ptr<Composite>> t;
    t.push_back(make_shuffle_pack());
    return t;
  }();
  if (first == FusionRole::none || second == FusionRole::none) return nullptr;
  for (const auto& composite : table)
    if (composite->first() == first && composite->second() == second && composite->runs_on(device))
      return composite.get();
  return nullptr;
}

std::vector<std::string> stage_types() {
  std::vector<std::string> names;
  for (const auto& entry : factories()) names.push_back(entry.first);
  return names;
}

std::string to_string(PortType t) {
  switch (t.kind) {
    case PortKind::field: return "field";
    case PortKind::symbols: return "symbols<u" + std::to_string(8 * t.width) + ">";
    case PortKind::bytes: return "bytes";
  }
  return "?";
}

bool accepts(PortType input, PortType output) { return input.kind == PortKind::bytes || input == output; }

nlohmann::json Stage::describe_header(const StageContext&, const std::vector<uint8_t>& header) const {
  return {{"bytes", header.size()}};
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

std::vector<double> StageParams::fill_values(const std::string& key) {
  const nlohmann::json* value = find(key);
  if (!value) return {};
  if (!value->is_array()) reject(key, "must be a list of fill values (numbers, or \"nan\", \"-nan\", \"inf\", \"-inf\")");
  std::vector<double> out;
  for (size_t i = 0; i < value->size(); ++i) {
    const nlohmann::json& item = value->at(i);
    const std::string where = key + "[" + std::to_string(i) + "]";
    if (item.is_number()) out.push_back(item.get<double>());
    else if (item.is_string()) {
      try {
        out.push_back(parse_fill_value(item.get<std::string>()));
      } catch (const Error& e) {
        reject(where, e.what());
      }
    } else {
      reject(where, "must be a number or one of \"nan\", \"-nan\", \"inf\", \"-inf\"");
    }
  }
  if (out.size() > MissingValues::capacity)
    reject(key, "holds at most " + std::to_string(MissingValues::capacity) + " fill values");
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
