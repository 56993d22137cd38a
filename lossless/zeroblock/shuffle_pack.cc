#include "lossless/zeroblock/shuffle_pack.hh"

#include "bitshuffle/bitshuffle.hh"
#include "lossless/zeroblock/zeroblock.hh"
#include "pipeline/error.hh"

namespace fzg {

namespace {

class ShufflePack final : public Fusion {
 public:
  bool matches(const GraphNode& first, const GraphNode& second, Device device) const override {
#ifdef FZG_HAVE_CUDA
    return device == Device::cuda && first.type == "bitshuffle" && second.type == "zero-block" &&
           second.stage->params().value("block_words", 0) == 1;
#else
    (void)first, (void)second, (void)device;
    return false;
#endif
  }

  uint64_t intermediate_size(uint64_t input_bytes) const override { return bitshuffle::shuffled_size(input_bytes); }

  Buffer encode(const StageContext& ctx, const Buffer& input) const override {
#ifdef FZG_HAVE_CUDA
    return shuffle_pack::encode_cuda(input.data(), input.size(), ctx.stream);
#else
    (void)ctx, (void)input;
    fail(ErrorCode::unsupported, "fused shuffle-pack needs CUDA");
#endif
  }

  Buffer decode(const StageContext& ctx, const Buffer& encoded, uint64_t input_bytes) const override {
#ifdef FZG_HAVE_CUDA
    Buffer out = Buffer::device(input_bytes, ctx.stream);
    shuffle_pack::decode_cuda(encoded.as<uint32_t>(), encoded.size(), out.data(), input_bytes, ctx.stream);
    return out;
#else
    (void)ctx, (void)encoded, (void)input_bytes;
    fail(ErrorCode::unsupported, "fused shuffle-pack needs CUDA");
#endif
  }
};

}  // namespace

std::unique_ptr<Fusion> make_shuffle_pack_fusion() { return std::make_unique<ShufflePack>(); }

}  // namespace fzg
