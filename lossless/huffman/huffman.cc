// The Huffman stage: parameters, sizes and backend dispatch.
#include "lossless/huffman/huffman.hh"

#include "core/error.hh"
#include "varlen/chunked_stream.hh"

namespace fzg {

namespace {

class HuffmanStage final : public Stage {
 public:
  explicit HuffmanStage(const nlohmann::json& params) {
    StageParams reader("huffman", params);
    p_.symbol_bytes = uint32_t(reader.integer("symbol", 2, 1, 2));
    p_.chunk_bytes = uint32_t(reader.integer("chunk", 16384, 1024, 65536));
    p_.max_length = uint32_t(reader.integer("max_length", 12, 8, 14));
    reader.finish();
    if (p_.chunk_bytes & (p_.chunk_bytes - 1))
      fail(ErrorCode::invalid_config, "stage 'huffman': parameter \"chunk\" must be a power of two");
  }

  const StageSpec& spec() const override {
    static const StageSpec s{"huffman", {{"in", bytes_port}}, {{"out", bytes_port}}, false, /*stores_raw=*/true};
    return s;
  }
  nlohmann::json params() const override {
    return {{"symbol", p_.symbol_bytes}, {"chunk", p_.chunk_bytes}, {"max_length", p_.max_length}};
  }

  std::vector<uint64_t> max_output_sizes(const StageContext&, const std::vector<uint64_t>& in) const override {
    return {huffman::max_encoded_size(p_, in.at(0))};
  }

  std::vector<Buffer> encode(const StageContext& ctx, const std::vector<Buffer>& inputs) const override {
    const Buffer& in = inputs.at(0);
    return {on_backend(
        ctx, [&] { return huffman::encode_cpu(p_, in.data(), in.size()); },
        [&] { return huffman::encode_cuda(p_, in.data(), in.size(), ctx.stream); })};
  }

  void check_outputs(const StageContext&, const std::vector<Buffer>& outputs,
                     const std::vector<uint64_t>& input_sizes) const override {
    require_data(outputs.at(0).size() <= huffman::max_encoded_size(p_, input_sizes.at(0)), "huffman stream size");
  }

  void decode(const StageContext& ctx, const std::vector<Buffer>& outputs, std::vector<Buffer>& inputs) const override {
    Buffer& out = inputs.at(0);
    const Buffer& encoded = outputs.at(0);
    on_backend(
        ctx, [&] { huffman::decode_cpu(p_, encoded.data(), encoded.size(), out.data(), out.size()); },
        [&] { huffman::decode_cuda(p_, encoded.data(), encoded.size(), out.data(), out.size(), ctx.stream); });
  }

 private:
  huffman::Params p_;
};

}  // namespace

std::unique_ptr<Stage> make_huffman_stage(const nlohmann::json& params) { return std::make_unique<HuffmanStage>(params); }

}  // namespace fzg
