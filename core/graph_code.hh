// The graph as format versions 3 and 4 store it: its canonical JSON, LZ77-coded against a fixed
// dictionary (the graphs of fzg's shipped configs when version 3 was made). Why: the JSON
// took 180-520 bytes in every file, ~3 % of a small field's file at ratio 9 (a 256x160
// satellite image, 18.7 KB) and more of an HDF5 or Zarr chunk's; coded, a shipped config's
// graph takes a few bytes, one with fill values or other parameters a few more. Layout in
// docs/FORMAT.md ("The graph"). The dictionary is part of the format: it never changes.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace fzg {

// The longest graph text a file holds (and so the largest config file a graph is read from).
constexpr size_t max_graph_text_bytes = size_t(16) << 20;

// The code of `text` (deterministic: every build writes the same bytes).
std::vector<uint8_t> encode_graph_text(const std::string& text);

// The text back; a code that is not one (a token past its end, a distance before the
// dictionary, a text over 16 MiB) is corrupt data.
std::string decode_graph_text(const uint8_t* code, size_t size);

}  // namespace fzg
