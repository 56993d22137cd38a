// The bitshuffle stage: ports, sizes and backend dispatch.
#include "bitshuffle/bitshuffle.hh"

#include "pipeline/error.hh"

namespace fzg {

namespace {

class BitshuffleStage final : public Stage {
 public:
  explicit BitshuffleStage(const nlohmann::json& params) { StageParams("bitshuffle", params).finish(); }

  const StageSpec& spec() const override {
    static const StageSpec s{"bitshuffle", {{"in", PortType::bytes}}, {{"out", PortType::bytes}}, false};
    return s;
  }
  nlohmann::json params() const override { return nlohmann::json::object(); }

  std::vector<uint64_t> max_output_sizes(const StageContext&, const std::vector<uint64_t>& in) const override {
    return {bitshuffle::shuffled_size(in.at(0))};
  }

  std::vector<Buffer> encode(const StageContext& ctx, const std::vector<Buffer>& inputs) const override {
    const Buffer& in = inputs.at(0);
    const uint64_t size = bitshuffle::shuffled_size(in.size());
    if (ctx.device == Device::cuda) {
#ifdef FZG_HAVE_CUDA
      Buffer out = Buffer::device(size, ctx.stream);
      bitshuffle::encode_cuda(in.data(), in.size(), out.as<uint32_t>(), ctx.stream);
      return {out};
#endif
    }
    Buffer out = Buffer::host(size);
    bitshuffle::encode_cpu(in.data(), in.size(), out.as<uint32_t>());
    return {out};
  }

  std::vector<Buffer> decode(const StageContext& ctx, const std::vector<Buffer>& outputs,
                             const std::vector<uint64_t>& input_sizes) const override {
    const uint64_t size = input_sizes.at(0);
    require_data(outputs.at(0).size() == bitshuffle::shuffled_size(size), "bitshuffle stream size");
    if (ctx.device == Device::cuda) {
#ifdef FZG_HAVE_CUDA
      Buffer out = Buffer::device(size, ctx.stream);
      bitshuffle::decode_cuda(outputs[0].as<uint32_t>(), out.data(), size, ctx.stream);
      return {out};
#endif
    }
    Buffer out = Buffer::host(size);
    bitshuffle::decode_cpu(outputs[0].as<uint32_t>(), out.data(), size);
    return {out};
  }
};

}  // namespace

std::unique_ptr<Stage> make_bitshuffle_stage(const nlohmann::json& params) {
  return std::make_unique<BitshuffleStage>(params);
}

}  // namespace fzg
