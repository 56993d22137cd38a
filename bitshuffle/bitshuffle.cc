// The bitshuffle stage: ports, sizes and backend dispatch.
#include "bitshuffle/bitshuffle.hh"

#include "core/error.hh"

namespace fzg {

namespace {

class BitshuffleStage final : public Stage {
 public:
  explicit BitshuffleStage(const nlohmann::json& params) { StageParams("bitshuffle", params).finish(); }

  const StageSpec& spec() const override {
    static const StageSpec s{"bitshuffle", {{"in", bytes_port}}, {{"out", bytes_port}}};
    return s;
  }
  nlohmann::json params() const override { return nlohmann::json::object(); }
  FusionRole fusion_role() const override { return FusionRole::bitplanes_32x32; }

  std::vector<uint64_t> max_output_sizes(const StageContext&, const std::vector<uint64_t>& in) const override {
    return {bitshuffle::shuffled_size(in.at(0))};
  }

  std::vector<Buffer> encode(const StageContext& ctx, const std::vector<Buffer>& inputs) const override {
    const Buffer& in = inputs.at(0);
    const uint64_t size = bitshuffle::shuffled_size(in.size());
    return on_backend(
        ctx,
        [&] {
          Buffer out = Buffer::host(size);
          bitshuffle::encode_cpu(in.data(), in.size(), out.as<uint32_t>());
          return std::vector<Buffer>{out};
        },
        [&] {
          Buffer out = Buffer::device(size, ctx.stream);
          bitshuffle::encode_cuda(in.data(), in.size(), out.as<uint32_t>(), ctx.stream);
          return std::vector<Buffer>{out};
        });
  }

  void decode(const StageContext& ctx, const std::vector<Buffer>& outputs, std::vector<Buffer>& inputs) const override {
    Buffer& out = inputs.at(0);
    require_data(outputs.at(0).size() == bitshuffle::shuffled_size(out.size()), "bitshuffle stream size");
    on_backend(
        ctx, [&] { bitshuffle::decode_cpu(outputs[0].as<uint32_t>(), out.data(), out.size()); },
        [&] { bitshuffle::decode_cuda(outputs[0].as<uint32_t>(), out.data(), out.size(), ctx.stream); });
  }
};

}  // namespace

std::unique_ptr<Stage> make_bitshuffle_stage(const nlohmann::json& params) {
  return std::make_unique<BitshuffleStage>(params);
}

}  // namespace fzg
