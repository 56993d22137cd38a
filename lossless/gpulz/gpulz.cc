// The GPULZ stage: parameters, sizes and backend dispatch.
#include "lossless/gpulz/gpulz.hh"

#include "core/error.hh"
#include "lossless/gpulz/gpulz_parse.hh"
#include "varlen/chunked_stream.hh"

namespace fzg {

namespace {

class GpulzStage final : public Stage {
 public:
  explicit GpulzStage(nlohmann::json params) {
    // The symbol width may be written as a number or a string ("auto" only as a string).
    if (params.is_object() && params.contains("symbol") && params["symbol"].is_number_integer())
      params["symbol"] = std::to_string(params["symbol"].get<int64_t>());
    StageParams reader("gpulz", params);
    p_.chunk_bytes = uint32_t(reader.integer("chunk", 2048, 256, 32768));
    p_.window = uint32_t(reader.integer("window", 64, 1, gpulz::max_window));
    const std::string symbol = reader.choice("symbol", "2", {"1", "2", "4", "auto"});
    p_.symbol = symbol == "auto" ? 0 : uint32_t(std::stoul(symbol));
    p_.min_match = uint32_t(reader.integer("min_match", 0, 0, gpulz::probe_cap));
    p_.offset_bits = uint32_t(reader.integer("offset_bits", 8, 8, 11));
    reader.finish();
    if (p_.offset_bits != 8 && p_.offset_bits != 11)
      fail(ErrorCode::invalid_config, "stage 'gpulz': parameter \"offset_bits\" must be 8 or 11");
    if (p_.chunk_bytes & (p_.chunk_bytes - 1))
      fail(ErrorCode::invalid_config, "stage 'gpulz': parameter \"chunk\" must be a power of two");
  }

  const StageSpec& spec() const override {
    static const StageSpec s{"gpulz", {{"in", bytes_port}}, {{"out", bytes_port}}, false, /*stores_raw=*/true};
    return s;
  }
  nlohmann::json params() const override {
    nlohmann::json j = {{"chunk", p_.chunk_bytes},
                        {"window", p_.window},
                        {"symbol", p_.symbol ? std::to_string(p_.symbol) : "auto"},
                        {"min_match", p_.min_match}};
    // Named only when not GPULZ's own tokens: graphs written before it keep their bytes.
    if (p_.wide()) j["offset_bits"] = p_.offset_bits;
    return j;
  }

  std::vector<uint64_t> max_output_sizes(const StageContext&, const std::vector<uint64_t>& in) const override {
    return {chunked::max_encoded_size(in.at(0), p_.chunk_bytes)};
  }

  std::vector<Buffer> encode(const StageContext& ctx, const std::vector<Buffer>& inputs) const override {
    const Buffer& in = inputs.at(0);
    return {on_backend(
        ctx, [&] { return gpulz::encode_cpu(p_, in.data(), in.size()); },
        [&] { return gpulz::encode_cuda(p_, in.data(), in.size(), ctx.stream); })};
  }

  void check_outputs(const StageContext&, const std::vector<Buffer>& outputs,
                     const std::vector<uint64_t>& input_sizes) const override {
    chunked::check_stream(outputs.at(0).size(), input_sizes.at(0), p_.chunk_bytes);
  }

  void decode(const StageContext& ctx, const std::vector<Buffer>& outputs, std::vector<Buffer>& inputs) const override {
    Buffer& out = inputs.at(0);
    const Buffer& encoded = outputs.at(0);
    on_backend(
        ctx, [&] { gpulz::decode_cpu(p_, encoded.data(), encoded.size(), out.data(), out.size()); },
        [&] { gpulz::decode_cuda(p_, encoded.data(), encoded.size(), out.data(), out.size(), ctx.stream); });
  }

 private:
  gpulz::Params p_;
};

}  // namespace

std::unique_ptr<Stage> make_gpulz_stage(const nlohmann::json& params) { return std::make_unique<GpulzStage>(params); }

}  // namespace fzg
