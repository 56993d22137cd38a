#include "core/plan.hh"

#include <algorithm>
#include <mutex>
#include <numeric>
#include <tuple>

#include "core/container.hh"

namespace fzg {

Dims Plan::chunk_dims(uint64_t k) const { return fzg::chunk_dims(dims, chunk_rows, k); }
uint64_t Plan::chunk_first_value(uint64_t k) const { return fzg::chunk_first_value(dims, chunk_rows, k); }

uint64_t plan_chunk_rows(const Graph& graph, const Dims& dims) {
  uint64_t align = 1;
  for (const auto& node : graph.nodes()) align = std::lcm(align, std::max<uint64_t>(1, node.stage->chunk_rows(dims)));
  const uint64_t per_row = dims.rank == 1 ? 1 : dims.rank == 2 ? dims.x : dims.x * dims.y;
  const uint64_t rows = per_row ? graph.chunk_values() / per_row / align * align : 0;
  return std::min(std::max(rows, align), std::max<uint64_t>(1, slowest_extent(dims)));
}

namespace {

// Whether node i's only output is node i + 1's only input (a pair a composite may join).
bool feeds_next(const Graph& graph, size_t i) {
  if (i + 1 >= graph.nodes().size()) return false;
  const auto& node = graph.nodes()[i];
  const auto& next = graph.nodes()[i + 1];
  return node.stage->spec().outputs.size() == 1 && next.inputs.size() == 1 && next.inputs[0].node == int(i) &&
         next.stage->spec().outputs.size() == 1;
}

std::vector<PlanStep> steps_of(const Graph& graph, Device device) {
  std::vector<PlanStep> steps;
  const auto& nodes = graph.nodes();
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Composite* composite =
        feeds_next(graph, i)
            ? find_composite(nodes[i].stage->fusion_role(), nodes[i + 1].stage->fusion_role(), device)
            : nullptr;
    if (composite) {
      steps.push_back({i, 2, composite, nodes[i].id + "+" + nodes[i + 1].id});
      ++i;
    } else {
      steps.push_back({i, 1, nullptr, nodes[i].id});
    }
  }
  return steps;
}

// Upper bound of every port's size, propagated forwards from the chunk's size. A stage that
// stores its inputs raw never stores more than them, so its bound is capped.
std::map<PortKey, uint64_t> port_bounds(const Graph& graph, DType dtype, const Dims& field, const Dims& chunk) {
  StageContext ctx;
  ctx.dtype = dtype;
  ctx.field_dims = field;
  ctx.dims = chunk;
  std::map<PortKey, uint64_t> bound;
  bound[{-1, ""}] = chunk.count() * dtype_size(dtype);
  for (size_t i = 0; i < graph.nodes().size(); ++i) {
    const auto& node = graph.nodes()[i];
    std::vector<uint64_t> in;
    for (const auto& ref : node.inputs) in.push_back(bound.at(key_of(ref)));
    std::vector<uint64_t> out = node.stage->max_output_sizes(ctx, in);
    const auto& spec = node.stage->spec();
    const uint64_t total_in = std::accumulate(in.begin(), in.end(), uint64_t(0));
    const uint64_t total_out = std::accumulate(out.begin(), out.end(), uint64_t(0));
    if (spec.stores_raw_when_larger && total_out >= total_in)  // may be stored raw: then never larger in all
      for (size_t p = 0; p < out.size(); ++p) out[p] = std::max(std::min(out[p], total_in), p < in.size() ? in[p] : 0);
    for (size_t p = 0; p < out.size(); ++p) bound[{int(i), spec.outputs[p].name}] = out[p];
  }
  return bound;
}

}  // namespace

std::shared_ptr<const Plan> make_plan(const Graph& graph, Device device, DType dtype, const Dims& dims,
                                      uint64_t chunk_rows) {
  if (chunk_rows == 0) chunk_rows = plan_chunk_rows(graph, dims);
  using Key = std::tuple<std::string, int, int, uint64_t, uint64_t, uint64_t, int, uint64_t>;
  const Key key{graph.canonical_text(), int(device), int(dtype), dims.x, dims.y, dims.z, dims.rank, chunk_rows};
  static std::mutex mutex;
  static std::map<Key, std::shared_ptr<const Plan>> cache;
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = cache.find(key);
    if (it != cache.end()) return it->second;
  }
  auto plan = std::make_shared<Plan>();
  plan->graph = graph;
  plan->device = device;
  plan->dtype = dtype;
  plan->dims = dims;
  plan->chunk_rows = chunk_rows;
  plan->chunks = chunk_count(dims, chunk_rows);
  plan->steps = steps_of(graph, device);
  plan->bounds = port_bounds(graph, dtype, dims, plan->chunk_dims(0));
  std::lock_guard<std::mutex> lock(mutex);
  if (cache.size() >= 256) cache.clear();  // a session uses a handful of shapes
  cache[key] = plan;
  return plan;
}

}  // namespace fzg
