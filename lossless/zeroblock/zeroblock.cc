// The zero-block stage: parameters, sizes and backend dispatch.
#include "lossless/zeroblock/zeroblock.hh"

#include "core/error.hh"

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
    static const StageSpec s{"zero-block", {{"in", bytes_port}}, {{"out", bytes_port}}, false, /*stores_raw=*/true};
    return s;
  }
  nlohmann::json params() const override { return {{"block_words", block_words_}}; }
  // One word per block: a group of 32 blocks is one 32x32 bit-plane tile.
  FusionRole fusion_role() const override { return block_words_ == 1 ? FusionRole::word_zero_pack : FusionRole::none; }

  std::vector<uint64_t> max_output_sizes(const StageContext&, const std::vector<uint64_t>& in) const override {
    return {zeroblock::Layout(in.at(0), block_words_).max_encoded_bytes()};
  }

  std::vector<Buffer> encode(const StageContext& ctx, const std::vector<Buffer>& inputs) const override {
    const Buffer& in = inputs.at(0);
    return on_backend(
        ctx,
        [&] {
          Buffer out = Buffer::host(zeroblock::Layout(in.size(), block_words_).max_encoded_bytes());
          out.shrink(zeroblock::encode_cpu(in.data(), in.size(), block_words_, out.as<uint32_t>()));
          return std::vector<Buffer>{out};
        },
        [&] { return std::vector<Buffer>{zeroblock::encode_cuda(in.data(), in.size(), block_words_, ctx.stream)}; });
  }

  // The group flags alone cover the whole input: a stream too short for them is damage.
  void check_outputs(const StageContext&, const std::vector<Buffer>& outputs,
                     const std::vector<uint64_t>& input_sizes) const override {
    require_data(outputs.at(0).size() / 4 >= zeroblock::Layout(input_sizes.at(0), block_words_).group_flag_words,
                 "zero-block flags");
  }

  void decode(const StageContext& ctx, const std::vector<Buffer>& outputs, std::vector<Buffer>& inputs) const override {
    Buffer& out = inputs.at(0);
    const Buffer& encoded = outputs.at(0);
    check_outputs(ctx, outputs, {out.size()});
    on_backend(
        ctx,
        [&] { zeroblock::decode_cpu(encoded.as<uint32_t>(), encoded.size(), block_words_, out.data(), out.size()); },
        [&] {
          StepChecks checks(ctx.checks, ctx.stream);
          zeroblock::decode_cuda(encoded.as<uint32_t>(), encoded.size(), block_words_, out.data(), out.size(),
                                 zeroblock::device_checks(checks), ctx.stream);
          checks.finish();
        });
  }

 private:
  uint32_t block_words_ = 1;
};

}  // namespace

// The CPU's messages for the same failures (zeroblock_cpu.cc).
zeroblock::Checks zeroblock::device_checks(StepChecks& checks) {
  return {checks.word("zero-block group flags"), checks.word("zero-block block flags"),
          checks.word("zero-block empty group"), checks.word("zero-block stream size")};
}

std::unique_ptr<Stage> make_zeroblock_stage(const nlohmann::json& params) {
  return std::make_unique<ZeroBlockStage>(params);
}

}  // namespace fzg
