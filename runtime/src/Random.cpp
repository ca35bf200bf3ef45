// SplitMix64 and the stream-seed derivation of Random.h.
#include "pipert/Random.h"

namespace pipert {

uint64_t SplitMix64::next() {
  uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

double SplitMix64::uniformSigned() {
  const double unit = static_cast<double>(next() >> 11) * (1.0 / 9007199254740992.0); // [0, 1)
  return 2.0 * unit - 1.0;
}

uint64_t streamSeed(uint64_t seed, int64_t stageIndex, const std::string &name) {
  uint64_t h = 0xcbf29ce484222325ULL; // FNV-1a over the name
  for (char c : name)
    h = (h ^ static_cast<unsigned char>(c)) * 0x100000001b3ULL;
  SplitMix64 mix(seed ^ (h * 0x9e3779b97f4a7c15ULL));
  uint64_t s = mix.next() ^ static_cast<uint64_t>(stageIndex) * 0xd1b54a32d192ed03ULL;
  return SplitMix64(s).next();
}

} // namespace pipert
