// Restores channel order after a move. A channel's messages are matched in the
// order they were sent, so when a move reorders a rank's sends, the receiver
// must receive them in the new order too: the receiving ops keep their places
// in the receiver's order but trade which micro-batch each one takes (an I's
// W trades along with it). That reorders the receiver's own sends, so the
// repair runs pass after pass down the chain until every channel agrees.
#pragma once

#include "synth/SynthProblem.h"

namespace pipec::synth {

// True when every channel ends in order within `passes` passes (the orders may
// still deadlock or break the budget: the CandidateEvaluator judges that).
bool repairChannels(const SynthProblem &problem, RankOrders &orders, int passes);

} // namespace pipec::synth
