// The key of a channel: each (sender, receiver, kind) has its own in-order
// stream on both ends and its own posting order. Compiler (deadlock check,
// simulator, stream lowering) and runtime (transports, the stream engine) key
// channels alike, and this is the one place that knows how a key is packed:
// bits 33..63 the sender, 2..32 the receiver, bits 0..1 the kind (0
// activation, 1 gradient, 2 evicted, 3 returned: pipert/Program.h's message
// kinds). Ranks are below 2^31, so both unpack exactly. Keys order as (sender,
// receiver, kind), as they did when the kind was one bit.
// Dependency-free: pipec includes it too.
#pragma once

#include <cstdint>

namespace pipert {

inline constexpr int kChannelSenderShift = 33;
inline constexpr int kChannelReceiverShift = 2;

constexpr uint64_t channelKey(int32_t from, int32_t to, unsigned kind) {
  return (uint64_t(uint32_t(from)) << kChannelSenderShift) |
         (uint64_t(uint32_t(to)) << kChannelReceiverShift) | uint64_t(kind & 3u);
}
constexpr uint64_t channelKey(int32_t from, int32_t to, bool gradient) {
  return channelKey(from, to, unsigned(gradient));
}
constexpr int32_t channelSender(uint64_t key) { return int32_t(uint32_t(key >> kChannelSenderShift)); }
constexpr int32_t channelReceiver(uint64_t key) {
  return int32_t(uint32_t(key >> kChannelReceiverShift) & 0x7fffffffu);
}
constexpr unsigned channelKind(uint64_t key) { return unsigned(key & 3); }
constexpr bool channelCarriesGradients(uint64_t key) { return channelKind(key) == 1; }

static_assert(channelSender(channelKey(7, 3, true)) == 7 && channelReceiver(channelKey(7, 3, true)) == 3 &&
                  channelCarriesGradients(channelKey(7, 3, true)) &&
                  channelSender(channelKey(2147483647, 0, false)) == 2147483647 &&
                  channelReceiver(channelKey(0, 2147483647, 3u)) == 2147483647 &&
                  channelKind(channelKey(5, 9, 2u)) == 2,
              "a channel key unpacks to what it was made of");

} // namespace pipert
