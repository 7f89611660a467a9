//===- PackCases.h - the packings the emulation tests walk ------*- C++ -*-===//
//
// The prologue's forward and backward emulation tests run their kernels on
// the same packings: every mix of up to a few sequences of length 0-3 with
// and without padding, then random mixes (some longer sequences, some with
// invalid metadata). One description of a packing and one enumeration serve
// both.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_UNITTESTS_DEVICEEMULATION_PACKCASES_H
#define GDN_UNITTESTS_DEVICEEMULATION_PACKCASES_H

#include <random>
#include <string>
#include <vector>

namespace gdn::emulation_tests {

/// One packing: per sequence its length and the padding after it.
struct Pack {
  std::vector<int> lengths, padding;
  bool padded = false, invalid = false;

  /// The buffer rows: every sequence and, when padded, its padding.
  int bufferTokens() const {
    int tokens = 0;
    for (size_t i = 0; i < lengths.size(); ++i)
      tokens += lengths[i] + (padded ? padding[i] : 0);
    return tokens;
  }
};

inline std::string describe(const Pack &pack, int rowBlocks) {
  std::string text = "row blocks " + std::to_string(rowBlocks) + ", lengths";
  for (size_t i = 0; i < pack.lengths.size(); ++i)
    text += " " + std::to_string(pack.lengths[i]) + "+" +
            std::to_string(pack.padded ? pack.padding[i] : 0);
  return text + (pack.invalid ? ", invalid metadata" : "");
}

/// Calls `check(pack, n)` for every packing of n = 0..maxSeqs sequences of
/// length 0-3, each followed by 0 or 1 padding rows, unpadded and (when any
/// padding is non-zero) padded; stops early when `check` returns false.
template <class Check> bool forEachSmallPack(int maxSeqs, Check check) {
  for (int n = 0; n <= maxSeqs; ++n) {
    int combinations = 1;
    for (int i = 0; i < n; ++i)
      combinations *= 8;
    for (int code = 0; code < combinations; ++code)
      for (bool padded : {false, true}) {
        Pack pack;
        pack.padded = padded;
        bool anyPadding = false;
        for (int i = 0, rest = code; i < n; ++i, rest /= 8) {
          pack.lengths.push_back(rest % 4);
          pack.padding.push_back((rest / 4) % 2);
          anyPadding |= pack.padding.back() != 0;
        }
        if (padded && !anyPadding)
          continue;
        if (!check(pack, n))
          return false;
      }
  }
  return true;
}

/// A random packing: up to 6 sequences, mostly short (0-5), some up to 40
/// rows, padded half the time, invalid metadata one time in ten.
inline Pack randomPack(std::mt19937 &random) {
  std::uniform_int_distribution<int> count(0, 6), shortLength(0, 5),
      longLength(0, 40), pad(0, 3), coin(0, 9);
  Pack pack;
  pack.padded = coin(random) < 5;
  pack.invalid = coin(random) == 0;
  for (int s = count(random); s > 0; --s) {
    pack.lengths.push_back(coin(random) < 7 ? shortLength(random)
                                            : longLength(random));
    pack.padding.push_back(pad(random));
  }
  return pack;
}

} // namespace gdn::emulation_tests

#endif // GDN_UNITTESTS_DEVICEEMULATION_PACKCASES_H
