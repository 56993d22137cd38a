// Real fields from ../shared/datasets (read by path, never copied here): the bound holds at
// rel 1e-2, 1e-3 and 1e-4, fill values included. Skipped where the folder is absent.
#include <fstream>
#include <iterator>

#include "test_util.hh"

namespace fzg {
namespace {

struct RealField {
  std::string file;
  std::vector<uint64_t> dims;
};

class RealData : public ::testing::TestWithParam<std::tuple<RealField, double>> {};

TEST_P(RealData, BoundHoldsAndTheFieldCompresses) {
  const auto& [field, bound] = GetParam();
  std::ifstream in(testing::shared_datasets() + "/" + field.file, std::ios::binary);
  if (!in) GTEST_SKIP() << "no " << field.file << " in ../shared/datasets";
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const Dims d = Dims::make(field.dims);
  ASSERT_EQ(bytes.size(), d.count() * 4);
  Buffer b = Buffer::host(bytes.size());
  std::memcpy(b.data(), bytes.data(), bytes.size());
  CompressOptions options;
  options.bound = {ErrorMode::rel, bound};
  const Buffer file = compress(Graph::default_fz(), {b.data(), Location::host, DType::f32, d}, options);
  const Decompressed out = decompress(file, {});
  // The bound as an independent checker computes it: bound x (finite max - finite min).
  double lo, hi;
  finite_range(b.data(), DType::f32, d.count(), &lo, &hi);
  EXPECT_EQ(testing::count_violations(b.as<float>(), out.data.as<float>(), d.count(), bound * (hi - lo)), 0u);
  EXPECT_GT(double(b.size()) / double(file.size()), 2.0);
}

INSTANTIATE_TEST_SUITE_P(
    Shared, RealData,
    ::testing::Combine(::testing::Values(RealField{"airtemp-a1b_49x37x240.f32", {49, 37, 240}},
                                         RealField{"theta-hybrid_100x100x15.f32", {100, 100, 15}},
                                         RealField{"uwnd-ncep_144x73x12.f32", {144, 73, 12}},
                                         RealField{"sst-nemo_360x330x1.f32", {360, 330}},
                                         RealField{"sst-ostia_432x18x54.f32", {432, 18, 54}},
                                         RealField{"tb-satellite_256x160x1.f32", {256, 160}}),
                       ::testing::Values(1e-2, 1e-3, 1e-4)),
    [](const auto& info) {
      std::string name = std::get<0>(info.param).file.substr(0, std::get<0>(info.param).file.find('_'));
      for (auto& c : name)
        if (c == '-') c = '_';
      return name + "_rel" + std::to_string(int(-std::log10(std::get<1>(info.param)) + 0.5));
    });

}  // namespace
}  // namespace fzg
