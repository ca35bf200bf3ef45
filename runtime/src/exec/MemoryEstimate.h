// The bytes a CPU program's run will allocate, computed from the sizes before
// anything is allocated, so that sizes past the machine are refused with an
// error naming the options, the size and the bytes (exit 2) instead of ending
// in std::bad_alloc (issue 26, F4: --hidden 65536, --seq 65536 and
// --micro-batch-size 65536 each did).
//
// An upper estimate of the largest terms, each from the code that allocates it:
//  - parameters: every stage instance a rank holds (a replicated stage's copy
//    too), per expert-parallel replica, value + gradient + optimizer state
//    (SGD momentum 1, AdamW 2), and the --check reference's own set;
//  - activations: a micro-batch of T = seq x micro-batch-size tokens is one
//    causal sequence, so attention holds T x T scores and probabilities
//    (AttentionBlock.h) beside about 40 T x h values of the blocks; live at once:
//    the compiler's predicted peak per rank plus one being computed per rank,
//    plus the most it holds offloaded at once (the host pool: the same
//    memory on a CPU) or evicted to a partner (BPipe: the held ones are in
//    the partner's predicted peak already; counted on the owner too, they
//    bound the buffers on the way), and the reference's pass through every stage;
//  - the batch: inputs and targets of every micro-batch of every replica.
// All arithmetic saturates (Bytes), so no size can overflow into a small count.
#pragma once

#include "exec/RunOptions.h"
#include "pipert/Program.h"

#include <cstdint>
#include <string>

namespace pipert {

// A byte count whose + and * saturate at UINT64_MAX.
struct Bytes {
  uint64_t value = 0;
  static Bytes of(uint64_t v) { return Bytes{v}; }
  Bytes operator+(Bytes o) const {
    uint64_t r;
    return Bytes{__builtin_add_overflow(value, o.value, &r) ? UINT64_MAX : r};
  }
  Bytes operator*(Bytes o) const {
    uint64_t r;
    return Bytes{__builtin_mul_overflow(value, o.value, &r) ? UINT64_MAX : r};
  }
};

struct MemoryEstimate {
  Bytes parameters, activations, batch;
  Bytes total() const { return parameters + activations + batch; }
};

MemoryEstimate estimateRunMemory(const Program &program, const RunOptions &options);

// The cap a run is held to: --max-memory when given, else the machine's
// physical memory, lowered to three quarters of the address-space limit
// (ulimit -v) when one is set. 0 when none of them can be read (no cap).
uint64_t memoryCap(const RunOptions &options);

// Throws std::invalid_argument naming the options, the sizes, the estimate and
// the cap when the estimate exceeds the cap.
void checkRunMemory(const Program &program, const RunOptions &options);

} // namespace pipert
