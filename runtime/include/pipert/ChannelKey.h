// The key of a channel: each (sender, receiver, kind) has its own in-order
// stream on both ends and its own posting order. Compiler (deadlock check,
// simulator, stream lowering) and runtime (transports, the stream engine) key
// channels alike, and this is the one place that knows how a key is packed:
// bits 33..63 the sender, 1..32 the receiver, bit 0 the kind (1: gradient).
// Ranks are below 2^31, so both unpack exactly.
// Dependency-free: pipec includes it too.
#pragma once

#include <cstdint>

namespace pipert {

inline constexpr int kChannelSenderShift = 33;
inline constexpr int kChannelReceiverShift = 1;

constexpr uint64_t channelKey(int32_t from, int32_t to, bool gradient) {
  return (uint64_t(uint32_t(from)) << kChannelSenderShift) |
         (uint64_t(uint32_t(to)) << kChannelReceiverShift) | uint64_t(gradient);
}
constexpr int32_t channelSender(uint64_t key) { return int32_t(uint32_t(key >> kChannelSenderShift)); }
constexpr int32_t channelReceiver(uint64_t key) {
  return int32_t(uint32_t(key >> kChannelReceiverShift));
}
constexpr bool channelCarriesGradients(uint64_t key) { return key & 1; }

static_assert(channelSender(channelKey(7, 3, true)) == 7 && channelReceiver(channelKey(7, 3, true)) == 3 &&
                  channelCarriesGradients(channelKey(7, 3, true)) &&
                  channelSender(channelKey(2147483647, 0, false)) == 2147483647,
              "a channel key unpacks to what it was made of");

} // namespace pipert
