// A compression graph: stages wired port to port, read from JSON and validated on load.
//
//   { "name": "fz",
//     "stages": [ { "id": "predict", "type": "lorenzo",    "inputs": { "field": "input" } },
//                 { "id": "shuffle", "type": "bitshuffle", "inputs": { "in": "predict.codes" } },
//                 { "id": "pack",    "type": "zero-block", "inputs": { "in": "shuffle.out" },
//                   "params": { "block_words": 4 } } ],
//     "store": [ "pack.out", "predict.outliers" ] }
//
// "chunk_values" (optional) is the chunk size: the graph runs on chunks of about that many
// values, whole slices of the slowest axis (whole tile rows for a predictor), each coded on its
// own; the file indexes them, so any chunk decodes alone.
//
// "input" names the field (or, in lossless mode, its raw bytes). Every output is consumed by
// exactly one stage or stored; the stored streams are what the file holds.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/stage.hh"

namespace fzg {

struct PortRef {
  int node = -1;      // index into Graph::nodes(); -1 is the graph's input
  std::string port;   // output port name of that node

  bool is_input() const { return node < 0; }
  bool operator==(const PortRef& o) const { return node == o.node && port == o.port; }
};

struct GraphNode {
  std::string id;
  std::string type;
  std::vector<PortRef> inputs;  // in the order of the stage's input ports
  std::shared_ptr<const Stage> stage;  // shared by copies of the graph and by every call
};

// 64 M values (256 MB of f32) per chunk. A chunk's stages synchronize with the host a few
// times, so chunks must be large for the GPU to stay busy: on an H100, 4 chunks in flight, a
// 100 M-value turbulent field at rel 1e-3 compressed / decompressed at 270 / 238 GB/s in
// 4 M-value chunks, 448 / 482 in 16 M, 499 / 626 in 32 M and 534 / 665 in 64 M
// (`fzg bench --chunk`, kernel-only, median of 20). Fields up to 64 M values are one chunk.
constexpr uint64_t default_chunk_values = uint64_t(1) << 26;
constexpr uint64_t max_chunk_values = uint64_t(1) << 40;

class Graph {
 public:
  static Graph from_json(const nlohmann::json& config);
  static Graph from_text(const std::string& text);
  static Graph from_file(const std::string& path);
  // The default pipeline, the same graph as configs/fz.json, built in so fzg runs anywhere.
  static Graph default_fz();

  // Canonical form with complete parameters: what the file stores.
  nlohmann::json to_json() const;
  // to_json().dump(), made once when the graph is built (every compress call stores it).
  const std::string& canonical_text() const { return *text_; }

  const std::string& name() const { return name_; }
  uint64_t chunk_values() const { return chunk_values_; }
  const std::vector<GraphNode>& nodes() const { return nodes_; }  // topological order
  const std::vector<PortRef>& stored() const { return stored_; }
  bool has_predictor() const;
  std::string describe(const PortRef& ref) const;  // "pack.out" or "input"

  // The same lossless chain fed with the raw input: the predictor is removed, its codes'
  // consumer reads the input bytes, its other outputs leave the store.
  Graph without_predictor() const;
  // The same graph with its predictor declaring these fill values (replacing its own; none
  // removes them): points equal to one of them, bit for bit in the field's type, are missing
  // (see core/missing_values.hh). The mask goes through the config's "fill_mask_coder"
  // (stage "<predictor>-mask") when it names one; the predictor's outputs that no stage reads
  // and the store does not hold yet are stored. Fails (invalid_config) without a predictor.
  Graph with_fill_values(const std::vector<double>& values) const;
  // The graph a run in `mode` with these fill values uses: with_fill_values(values), or this
  // graph itself without fill values or in lossless mode (which has no predictor to take them).
  Graph with_fill_values_for(const std::vector<double>& values, ErrorMode mode) const;
  // Its predictor's fill values in a field of `type` (none without a predictor).
  MissingValues missing_values(DType type) const;

 private:
  std::string name_;
  uint64_t chunk_values_ = default_chunk_values;
  std::vector<GraphNode> nodes_;
  std::vector<PortRef> stored_;
  // "fill_mask_coder": the stage with_fill_values puts on the predictor's mask (null: none, the
  // mask is stored as it is). Not part of the canonical form: the stage it adds is.
  nlohmann::json mask_coder_;
  std::shared_ptr<const std::string> text_;
};

}  // namespace fzg
