// The bit-plane transform and the zero-word packer as one composite step on the GPU.
#include "fusions/shuffle_pack/shuffle_pack.hh"

#include "bitshuffle/bitshuffle.hh"
#include "core/error.hh"

namespace fzg {

namespace {

class ShufflePack final : public Composite {
 public:
  const char* name() const override { return "shuffle+pack"; }
  FusionRole first() const override { return FusionRole::bitplanes_32x32; }
  FusionRole second() const override { return FusionRole::word_zero_pack; }
  bool runs_on(Device device) const override { return device == Device::cuda && cuda_built(); }
  uint64_t intermediate_size(uint64_t input_bytes) const override { return bitshuffle::shuffled_size(input_bytes); }

  Buffer encode(const StageContext& ctx, const Buffer& input) const override {
    return on_backend(
        ctx, [&]() -> Buffer { fail(ErrorCode::unsupported, "shuffle+pack runs on the GPU only"); },
        [&] { return shuffle_pack::encode_cuda(input.data(), input.size(), ctx.stream); });
  }

  void decode(const StageContext& ctx, const Buffer& encoded, Buffer& input) const override {
    on_backend(
        ctx, [&] { fail(ErrorCode::unsupported, "shuffle+pack runs on the GPU only"); },
        [&] {
          StepChecks checks(ctx.checks, ctx.stream);
          shuffle_pack::decode_cuda(encoded.as<uint32_t>(), encoded.size(), input.data(), input.size(),
                                    zeroblock::device_checks(checks), ctx.stream);
          checks.finish();
        });
  }
};

}  // namespace

std::unique_ptr<Composite> make_shuffle_pack() { return std::make_unique<ShufflePack>(); }

}  // namespace fzg
