#include "core/graph.hh"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "core/container.hh"
#include "core/error.hh"
#include "core/graph_code.hh"
#include "core/registry.hh"

namespace fzg {

namespace {

[[noreturn]] void config_error(const std::string& message) { fail(ErrorCode::invalid_config, message); }

void reject_unknown_keys(const nlohmann::json& object, const std::set<std::string>& allowed, const std::string& where) {
  for (const auto& item : object.items())
    if (!allowed.count(item.key())) config_error(where + ": unknown key \"" + item.key() + "\"");
}

const std::string& require_string(const nlohmann::json& object, const std::string& key, const std::string& where) {
  if (!object.contains(key) || !object.at(key).is_string())
    config_error(where + ": \"" + key + "\" must be a string");
  return object.at(key).get_ref<const std::string&>();
}

// A parsed but not yet ordered stage.
struct RawNode {
  std::string id, type;
  nlohmann::json params;
  std::vector<std::pair<std::string, std::string>> inputs;  // port name -> "node.port" text
  std::shared_ptr<Stage> stage;
};

std::pair<std::string, std::string> split_ref(const std::string& text, const std::string& where) {
  if (text == "input") return {"", ""};
  const auto dot = text.find('.');
  if (dot == std::string::npos || dot == 0 || dot + 1 == text.size())
    config_error(where + ": bad port reference \"" + text + "\" (expected \"stage.port\" or \"input\")");
  return {text.substr(0, dot), text.substr(dot + 1)};
}

}  // namespace

Graph Graph::from_text(const std::string& text) {
  nlohmann::json config;
  try {
    config = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    config_error(std::string("config is not valid JSON: ") + e.what());
  }
  return from_json(config);
}

Graph Graph::from_file(const std::string& path) {
  // A directory opens and reads as empty; a stream may have no end (/dev/zero): a config is
  // read up to the graph text's limit, and one past it is refused.
  std::error_code unknown;  // where the path cannot be looked at, opening it says why
  if (std::filesystem::is_directory(path, unknown)) fail(ErrorCode::io, "config '" + path + "' is a directory");
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(ErrorCode::io, "cannot open config '" + path + "'");
  std::string text;
  char piece[1 << 16];
  while (in.read(piece, sizeof piece) || in.gcount() > 0) {
    text.append(piece, size_t(in.gcount()));
    if (text.size() > max_graph_text_bytes)
      config_error("config '" + path + "' is over " + std::to_string(max_graph_text_bytes >> 20) + " MiB");
  }
  if (in.bad()) fail(ErrorCode::io, "cannot read config '" + path + "'");
  return from_text(text);
}

Graph Graph::default_fz() {
  static const char* const config = R"({
    "name": "fz",
    "stages": [
      { "id": "predict", "type": "lorenzo",    "inputs": { "field": "input" } },
      { "id": "shuffle", "type": "bitshuffle", "inputs": { "in": "predict.codes" } },
      { "id": "pack",    "type": "zero-block", "inputs": { "in": "shuffle.out" }, "params": { "block_words": 1 } } ],
    "store": [ "pack.out", "predict.outliers" ] })";
  return from_text(config);
}

Graph Graph::from_json(const nlohmann::json& config) {
  if (!config.is_object()) config_error("config must be a JSON object");
  reject_unknown_keys(config, {"name", "description", "chunk_values", "fill_mask_coder", "stages", "store"}, "config");
  Graph graph;
  if (config.contains("fill_mask_coder")) {
    const nlohmann::json& coder = config.at("fill_mask_coder");
    const std::string where = "config: \"fill_mask_coder\"";
    if (!coder.is_object()) config_error(where + " must be an object like {\"type\": \"huffman\"}");
    reject_unknown_keys(coder, {"type", "params"}, where);
    const std::string type = require_string(coder, "type", where);
    std::unique_ptr<Stage> stage;
    try {
      stage = make_stage(type, coder.value("params", nlohmann::json::object()));
    } catch (const Error& e) {
      config_error(where + ": " + e.what());
    }
    if (stage->spec().inputs.size() != 1 || stage->spec().inputs[0].type != bytes_port || stage->spec().outputs.empty())
      config_error(where + ": a coder of one bytes input, such as huffman or gpulz");
    graph.mask_coder_ = coder;
  }
  graph.name_ = config.contains("name") ? require_string(config, "name", "config") : "custom";
  if (config.contains("chunk_values")) {
    const auto& v = config.at("chunk_values");
    // Signed (built in code: json["chunk_values"] = 16384) or unsigned (parsed from text), as
    // StageParams reads an integer.
    if (!v.is_number_integer() || v.get<int64_t>() < 1 || v.get<int64_t>() > int64_t(max_chunk_values))
      config_error("config: \"chunk_values\" must be an integer in [1, " + std::to_string(max_chunk_values) + "]");
    graph.chunk_values_ = v.get<uint64_t>();
  }
  if (!config.contains("stages") || !config.at("stages").is_array()) config_error("config: \"stages\" must be an array");
  if (!config.contains("store") || !config.at("store").is_array()) config_error("config: \"store\" must be an array");
  // Checked before any stage is made: a file's limits (container.hh), and a config of a million
  // stages fails at once.
  if (config.at("stages").size() > max_stage_count)
    config_error("config: a graph has at most " + std::to_string(max_stage_count) + " stages (a file's limit)");
  if (config.at("store").size() > max_stream_count)
    config_error("config: a graph stores at most " + std::to_string(max_stream_count) + " streams (a file's limit)");

  std::vector<RawNode> raw;
  std::map<std::string, int> index_of;
  for (const auto& s : config.at("stages")) {
    if (!s.is_object()) config_error("config: each stage must be an object");
    RawNode node;
    node.id = require_string(s, "id", "stage");
    const std::string where = "stage '" + node.id + "'";
    reject_unknown_keys(s, {"id", "type", "inputs", "params"}, where);
    if (node.id.empty() || node.id == "input" || node.id.find('.') != std::string::npos)
      config_error(where + ": an id is non-empty, not \"input\", and has no '.'");
    if (index_of.count(node.id)) config_error(where + ": duplicate id");
    node.type = require_string(s, "type", where);
    node.params = s.contains("params") ? s.at("params") : nlohmann::json::object();
    try {
      node.stage = make_stage(node.type, node.params);
    } catch (const Error& e) {
      config_error(where + ": " + e.what());
    }
    const auto& spec = node.stage->spec();
    if (spec.stores_raw_when_larger && spec.outputs.size() < spec.inputs.size())
      config_error(where + ": a stage that stores its inputs raw needs an output port for each");
    const nlohmann::json inputs = s.contains("inputs") ? s.at("inputs") : nlohmann::json::object();
    if (!inputs.is_object()) config_error(where + ": \"inputs\" must be an object");
    for (const auto& item : inputs.items()) {
      bool known = false;
      for (const auto& port : spec.inputs) known = known || port.name == item.key();
      if (!known) config_error(where + ": unknown input port \"" + item.key() + "\"");
    }
    for (const auto& port : spec.inputs) {
      if (!inputs.contains(port.name)) config_error(where + ": input port \"" + port.name + "\" is not connected");
      if (!inputs.at(port.name).is_string()) config_error(where + ": input \"" + port.name + "\" must be a string");
      node.inputs.emplace_back(port.name, inputs.at(port.name).get<std::string>());
    }
    index_of[node.id] = int(raw.size());
    raw.push_back(std::move(node));
  }

  // Resolve references and check port types.
  auto resolve = [&](const std::string& text, const std::string& where, PortType* type) {
    auto [node_id, port] = split_ref(text, where);
    if (node_id.empty()) {
      *type = field_port;
      return PortRef{};
    }
    auto it = index_of.find(node_id);
    if (it == index_of.end()) config_error(where + ": reference to unknown stage \"" + node_id + "\"");
    for (const auto& out : raw[it->second].stage->spec().outputs)
      if (out.name == port) {
        *type = out.type;
        return PortRef{it->second, port};
      }
    config_error(where + ": stage '" + node_id + "' has no output port \"" + port + "\"");
  };

  std::vector<std::vector<PortRef>> resolved(raw.size());
  std::map<std::pair<int, std::string>, std::string> consumer;  // output -> who reads it
  std::vector<std::set<int>> depends_on(raw.size());
  for (size_t i = 0; i < raw.size(); ++i) {
    const auto& spec = raw[i].stage->spec();
    for (size_t p = 0; p < raw[i].inputs.size(); ++p) {
      const std::string where = "stage '" + raw[i].id + "' input \"" + raw[i].inputs[p].first + "\"";
      PortType produced;
      PortRef ref = resolve(raw[i].inputs[p].second, where, &produced);
      const PortType wanted = spec.inputs[p].type;
      if (!accepts(wanted, produced))
        config_error(where + ": expects " + to_string(wanted) + " but \"" + raw[i].inputs[p].second + "\" is " +
                     to_string(produced));
      if (ref.node == int(i)) config_error(where + ": a stage cannot read its own output (cycle)");
      auto key = std::make_pair(ref.node, ref.port);
      if (consumer.count(key))
        config_error(where + ": \"" + raw[i].inputs[p].second + "\" is already read by " + consumer[key]);
      consumer[key] = "stage '" + raw[i].id + "'";
      if (!ref.is_input()) depends_on[i].insert(ref.node);
      resolved[i].push_back(ref);
    }
  }

  // Stored outputs.
  std::vector<PortRef> stored_raw;
  for (const auto& s : config.at("store")) {
    if (!s.is_string()) config_error("config: \"store\" entries must be strings");
    PortType type;
    PortRef ref = resolve(s.get<std::string>(), "store", &type);
    auto key = std::make_pair(ref.node, ref.port);
    if (consumer.count(key)) config_error("store: \"" + s.get<std::string>() + "\" is already read by " + consumer[key]);
    consumer[key] = "the store";
    stored_raw.push_back(ref);
  }
  if (stored_raw.empty()) config_error("config: \"store\" names no stream");
  for (size_t i = 0; i < raw.size(); ++i)
    for (const auto& out : raw[i].stage->spec().outputs)
      if (!consumer.count({int(i), out.name}))
        config_error("stage '" + raw[i].id + "' output \"" + out.name + "\" is neither consumed nor stored");

  // Topological order (Kahn), stable with respect to the config's order.
  std::vector<int> order, new_index(raw.size(), -1);
  std::vector<bool> placed(raw.size(), false);
  while (order.size() < raw.size()) {
    bool progressed = false;
    for (size_t i = 0; i < raw.size(); ++i) {
      if (placed[i]) continue;
      bool ready = true;
      for (int d : depends_on[i]) ready = ready && placed[d];
      if (!ready) continue;
      placed[i] = true;
      new_index[i] = int(order.size());
      order.push_back(int(i));
      progressed = true;
    }
    if (!progressed) {
      for (size_t i = 0; i < raw.size(); ++i)
        if (!placed[i]) config_error("stage '" + raw[i].id + "' is part of a cycle");
    }
  }
  auto renumber = [&](PortRef ref) {
    if (!ref.is_input()) ref.node = new_index[ref.node];
    return ref;
  };
  for (int i : order) {
    GraphNode node{raw[i].id, raw[i].type, {}, raw[i].stage};
    for (const auto& ref : resolved[i]) node.inputs.push_back(renumber(ref));
    graph.nodes_.push_back(std::move(node));
  }
  for (const auto& ref : stored_raw) graph.stored_.push_back(renumber(ref));
  graph.text_ = std::make_shared<const std::string>(graph.to_json().dump());
  return graph;
}

std::string Graph::describe(const PortRef& ref) const {
  return ref.is_input() ? "input" : nodes_.at(ref.node).id + "." + ref.port;
}

nlohmann::json Graph::to_json() const {
  nlohmann::json stages = nlohmann::json::array();
  for (const auto& node : nodes_) {
    nlohmann::json inputs = nlohmann::json::object();
    const auto& spec = node.stage->spec();
    for (size_t p = 0; p < node.inputs.size(); ++p) inputs[spec.inputs[p].name] = describe(node.inputs[p]);
    stages.push_back({{"id", node.id}, {"type", node.type}, {"inputs", inputs}, {"params", node.stage->params()}});
  }
  nlohmann::json store = nlohmann::json::array();
  for (const auto& ref : stored_) store.push_back(describe(ref));
  return {{"name", name_}, {"chunk_values", chunk_values_}, {"stages", stages}, {"store", store}};
}

bool Graph::has_predictor() const {
  for (const auto& node : nodes_)
    if (node.stage->spec().predictor) return true;
  return false;
}

Graph Graph::with_fill_values(const std::vector<double>& values) const {
  nlohmann::json config = to_json();
  int predictor = -1;
  for (size_t i = 0; i < nodes_.size(); ++i)
    if (nodes_[i].stage->spec().predictor) predictor = int(i);
  if (predictor < 0) fail(ErrorCode::invalid_config, "fill values need a predictor, and graph '" + name_ + "' has none");
  nlohmann::json& params = config["stages"][predictor]["params"];
  if (values.empty()) {
    params.erase("fill");
  } else {
    nlohmann::json fill = nlohmann::json::array();
    for (double v : values) {
      if (std::isfinite(v)) fill.push_back(v);
      else fill.push_back(fill_value_text(v));
    }
    params["fill"] = fill;
  }
  const nlohmann::json predictor_params = params;  // `params` points into stages replaced below
  const std::string id = nodes_[predictor].id;
  // The config's coder of the mask ("fill_mask_coder"), as stage "<predictor>-mask": replaced
  // when fill values are given again, removed with them.
  const std::string coder_id = id + "-mask";
  nlohmann::json kept_stages = nlohmann::json::array();
  bool had_coder = false;
  for (const auto& stage : config["stages"]) {
    bool codes_the_mask = false;
    for (const auto& item : stage["inputs"].items()) codes_the_mask = codes_the_mask || item.value() == id + ".mask";
    if (stage["id"] == coder_id && codes_the_mask) had_coder = true;
    else kept_stages.push_back(stage);
  }
  config["stages"] = kept_stages;
  nlohmann::json kept_store = nlohmann::json::array();
  for (const auto& ref : config["store"])
    if (!had_coder || ref.get<std::string>().rfind(coder_id + ".", 0) != 0) kept_store.push_back(ref);
  config["store"] = kept_store;
  if (!values.empty() && !mask_coder_.is_null()) {
    const nlohmann::json coder_params = mask_coder_.value("params", nlohmann::json::object());
    const StageSpec coder = make_stage(mask_coder_["type"].get<std::string>(), coder_params)->spec();
    for (const auto& stage : config["stages"])
      if (stage["id"] == coder_id) config_error("fill values: the graph has a stage '" + coder_id + "' of its own");
    config["stages"].push_back({{"id", coder_id},
                                {"type", mask_coder_["type"]},
                                {"inputs", {{coder.inputs[0].name, id + ".mask"}}},
                                {"params", coder_params}});
    for (const auto& port : coder.outputs) config["store"].push_back(coder_id + "." + port.name);
  }
  if (!mask_coder_.is_null()) config["fill_mask_coder"] = mask_coder_;
  // The predictor's outputs with these parameters: store the new ones nobody reads, drop
  // stored ones it no longer has.
  const StageSpec spec = make_stage(nodes_[predictor].type, predictor_params)->spec();
  std::set<std::string> read, outputs;
  for (const auto& stage : config["stages"])
    for (const auto& item : stage["inputs"].items()) read.insert(item.value().get<std::string>());
  for (const auto& port : spec.outputs) outputs.insert(id + "." + port.name);
  nlohmann::json store = nlohmann::json::array();
  std::set<std::string> stored;
  for (const auto& ref : config["store"]) {
    const std::string text = ref.get<std::string>();
    if (text.rfind(id + ".", 0) == 0 && !outputs.count(text)) continue;
    store.push_back(text);
    stored.insert(text);
  }
  for (const auto& port : spec.outputs) {
    const std::string text = id + "." + port.name;
    if (!read.count(text) && !stored.count(text)) store.push_back(text);
  }
  config["store"] = store;
  return from_json(config);
}

Graph Graph::with_fill_values_for(const std::vector<double>& values, ErrorMode mode) const {
  return values.empty() || mode == ErrorMode::lossless ? *this : with_fill_values(values);
}

MissingValues Graph::missing_values(DType type) const {
  for (const auto& node : nodes_)
    if (node.stage->spec().predictor) return node.stage->missing_values(type);
  return {};
}

Graph Graph::without_predictor() const {
  nlohmann::json config = to_json();
  std::set<std::string> dropped;                // the predictors, and stages fed by their other outputs
  std::map<std::string, std::string> codes_of;  // "p.codes" -> "input"
  nlohmann::json stages = nlohmann::json::array();
  for (const auto& node : nodes_) {
    if (node.stage->spec().predictor) {
      dropped.insert(node.id);
      codes_of[node.id + "." + node.stage->spec().outputs.at(0).name] = "input";
    }
  }
  auto from_dropped = [&](const std::string& ref) {
    const auto dot = ref.find('.');
    return dot != std::string::npos && dropped.count(ref.substr(0, dot));
  };
  // Stages in topological order: one that codes a predictor's outliers or mask (or what such
  // a stage made) has nothing to code without the predictor and goes with it.
  for (auto stage : config["stages"]) {
    if (dropped.count(stage["id"].get<std::string>())) continue;
    bool fed_by_dropped = false;
    for (auto& item : stage["inputs"].items()) {
      const std::string ref = item.value().get<std::string>();
      if (codes_of.count(ref)) item.value() = "input";
      else fed_by_dropped = fed_by_dropped || from_dropped(ref);
    }
    if (fed_by_dropped) {
      for (const auto& item : stage["inputs"].items())
        if (codes_of.count(item.value().get<std::string>()) || item.value() == "input")
          fail(ErrorCode::unsupported, "lossless mode: stage '" + stage["id"].get<std::string>() +
                                           "' reads the predictor's codes together with its other outputs");
      dropped.insert(stage["id"].get<std::string>());
      continue;
    }
    stages.push_back(stage);
  }
  nlohmann::json store = nlohmann::json::array();
  for (const auto& ref : config["store"]) {
    const std::string text = ref.get<std::string>();
    if (codes_of.count(text)) store.push_back("input");
    else if (!from_dropped(text)) store.push_back(text);
  }
  config["stages"] = stages;
  config["store"] = store;
  return from_json(config);
}

}  // namespace fzg
