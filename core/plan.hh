// Plan, then run. A plan is made once per (graph, device, dtype, dims, chunking) and cached:
// the chunk geometry, the steps (a stage, or a composite where two stages' fusion roles
// match one for the device) and every port's size bound for a chunk. The executor then has
// one loop each way over the steps, run per chunk.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/graph.hh"
#include "fusions/composite.hh"

namespace fzg {

// A port: (node, output name); node -1 (name "") is the graph's input.
using PortKey = std::pair<int, std::string>;
inline PortKey key_of(const PortRef& ref) { return {ref.node, ref.is_input() ? std::string() : ref.port}; }

struct PlanStep {
  size_t first = 0;   // the graph node it starts at
  size_t length = 1;  // nodes it covers: 1, or 2 for a composite
  const Composite* composite = nullptr;
  std::string name;   // "predict", or "shuffle+pack" for a composite
};

struct Plan {
  Graph graph;
  Device device = Device::cpu;
  DType dtype = DType::f32;
  Dims dims;
  uint64_t chunk_rows = 1;  // slices of the slowest axis per chunk
  uint64_t chunks = 1;
  std::vector<PlanStep> steps;
  std::map<PortKey, uint64_t> bounds;  // every port's worst-case size in a chunk (the first, the largest)

  Dims chunk_dims(uint64_t k) const;
  uint64_t chunk_first_value(uint64_t k) const;
};

// The plan for this run, made or taken from the cache. chunk_rows 0 chunks as the graph's
// chunk_values asks (a writer); a reader passes the file's.
std::shared_ptr<const Plan> make_plan(const Graph& graph, Device device, DType dtype, const Dims& dims,
                                      uint64_t chunk_rows = 0);

// Slices per chunk for a graph's chunk_values on this field: whole multiples of every stage's
// chunk_rows (a predictor's tile extent), at least one multiple.
uint64_t plan_chunk_rows(const Graph& graph, const Dims& dims);

}  // namespace fzg
