// The zero-block stage: parameters, sizes and backend dispatch.
#include "lossless/zeroblock/zeroblock.hh"

#include "pipeline/error.hh"

namespace fzg {

namespace {

class ZeroBlockStage final : public Stage {
 public:
  explicit ZeroBlockStage(const nlohmann::json& params) {
    StageParams reader("zero-block", params);
    block_words_ = uint32_t(reader.integer("block_words", 1, 1, 8));
    reader.finish();
    if (block_words_ & (block_words_ - 1))
      fail(ErrorCode::invalid_config, "stage 'zero-block': parameter \"block_words\" must be 1, 2, 4 or 8");
  }

  const StageSpec& spec() const override {
    static const StageSpec s{"zero-block", {{"in", PortType::bytes}}, {{"out", PortType::bytes}}, false, true};
    return s;
  }
  nlohmann::json params() const override { return {{"block_words", block_words_}}; }

  std::vector<uint64_t> max_output_sizes(const StageContext&, const std::vector<uint64_t>& in) const override {
    return {zeroblock::Layout(in.at(0), block_words_).max_encoded_bytes()};
  }

  std::vector<Buffer> encode(const StageContext& ctx, const std::vector<Buffer>& inputs) const override {
    const Buffer& in = inputs.at(0);
    if (ctx.device == Device::cuda) {
#ifdef FZG_HAVE_CUDA
      return {zeroblock::encode_cuda(in.data(), in.size(), block_words_, ctx.stream)};
#endif
    }
    Buffer out = Buffer::host(zeroblock::Layout(in.size(), block_words_).max_encoded_bytes());
    out.shrink(zeroblock::encode_cpu(in.data(), in.size(), block_words_, out.as<uint32_t>()));
    return {out};
  }

  std::vector<Buffer> decode(const StageContext& ctx, const std::vector<Buffer>& outputs,
                             const std::vector<uint64_t>& input_sizes) const override {
    const uint64_t size = input_sizes.at(0);
    const Buffer& encoded = outputs.at(0);
    // The group flags alone cover the whole output: a stream too short for them is damage,
    // found before the output is allocated (a small file may not claim petabytes).
    require_data(encoded.size() / 4 >= zeroblock::Layout(size, block_words_).group_flag_words, "zero-block flags");
    if (ctx.device == Device::cuda) {
#ifdef FZG_HAVE_CUDA
      Buffer out = Buffer::device(size, ctx.stream);
      zeroblock::decode_cuda(encoded.as<uint32_t>(), encoded.size(), block_words_, out.data(), size, ctx.stream);
      return {out};
#endif
    }
    Buffer out = Buffer::host(size);
    zeroblock::decode_cpu(encoded.as<uint32_t>(), encoded.size(), block_words_, out.data(), size);
    return {out};
  }

 private:
  uint32_t block_words_ = 1;
};

}  // namespace

std::unique_ptr<Stage> make_zeroblock_stage(const nlohmann::json& params) {
  return std::make_unique<ZeroBlockStage>(params);
}

}  // namespace fzg
