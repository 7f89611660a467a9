//===- lengths.h - sequence lengths: parsed, packed, described ------------===//
//
// A pack of sequences is given by its lengths: on the command line
// ("8192,8192,2048"), as cu_seqlens (their running sums, from 0), and in
// the harnesses' output lines, which scripts and readers compare across
// runs, so every harness must spell a mix the same way.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_TEST_INTEGRATION_HARNESS_LENGTHS_H
#define GDN_TEST_INTEGRATION_HARNESS_LENGTHS_H

#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

namespace harness {

/// Comma-separated lengths ("8192,8192"); std::stoll throws on an empty or
/// non-numeric item (a typo must not time another shape).
inline std::vector<int64_t> parseLengths(const std::string &text) {
  std::vector<int64_t> lengths;
  std::stringstream stream(text);
  std::string piece;
  while (std::getline(stream, piece, ','))
    lengths.push_back(std::stoll(piece));
  return lengths;
}

/// cu_seqlens of `lengths` as `T`: 0, then the running sums.
template <class T, class Length>
std::vector<T> offsetsOf(const std::vector<Length> &lengths) {
  std::vector<T> cu(1, T(0));
  for (const Length &length : lengths)
    cu.push_back(cu.back() + static_cast<T>(length));
  return cu;
}

/// A mix in runs of equal lengths: {8192, 8192, 2048} -> "8192x2+2048x1".
template <class Length> std::string describeMix(const std::vector<Length> &lengths) {
  std::string text;
  for (size_t i = 0; i < lengths.size();) {
    size_t j = i;
    while (j < lengths.size() && lengths[j] == lengths[i])
      ++j;
    text += (text.empty() ? "" : "+") + std::to_string(lengths[i]) + "x" +
            std::to_string(j - i);
    i = j;
  }
  return text;
}

/// " lengths L0 L1+P1 ...": each length, with the padding rows after it
/// (from `cuPadded`, the slots' offsets) where there are any.
inline std::string describeLengths(const std::vector<int> &lengths,
                                   const std::vector<int32_t> &cuPadded) {
  std::string text = " lengths";
  for (size_t i = 0; i < lengths.size(); ++i) {
    text += " " + std::to_string(lengths[i]);
    const int pad = cuPadded[i + 1] - cuPadded[i] - lengths[i];
    if (pad)
      text += "+" + std::to_string(pad);
  }
  return text;
}

} // namespace harness

#endif // GDN_TEST_INTEGRATION_HARNESS_LENGTHS_H
