// ExpertExchange: the expert-parallel group of one MoE stage on the GPU, the
// device twin of pipert::AllToAll. Participant rank() of size() holds experts
// [rank * E/size, (rank+1) * E/size), as the CPU runtime shards them; the
// group is the same (rank, chunk) slot's stage in each pipeline replica.
//
// allToAll is collective and only enqueues: every participant calls it with
// the same shapes, in the same order, and the transfer runs on `stream`. Sizes
// are fixed by the caller (the MoE stage sends fixed-capacity expert buffers),
// so nothing comes back to the host and a step can be captured into a graph.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

namespace pipert::cuda {

class ExpertExchange {
public:
  // Where piece i for (or from) peer p sits in a buffer of size() * pieces
  // pieces: PeerMajor at p * pieces + i (a peer's pieces together), PieceMajor
  // at i * size() + p (a piece's peers together).
  enum class Layout { PeerMajor, PieceMajor };

  virtual ~ExpertExchange() = default;
  virtual int size() const = 0;
  virtual int rank() const = 0;
  // Sends piece (p, i) of `send` to peer p, and peer p's piece i for this
  // participant lands at (p, i) of `recv`; each piece is pieceBytes long.
  // The buffers must not overlap.
  virtual void allToAll(const void *send, Layout sendLayout, void *recv, Layout recvLayout,
                        size_t pieces, size_t pieceBytes, cudaStream_t stream) = 0;
};

// The offset, in pieces, of piece (peer, piece) in a `layout` buffer.
inline size_t pieceOffset(ExpertExchange::Layout layout, int peer, size_t piece, int peers,
                          size_t pieces) {
  return layout == ExpertExchange::Layout::PeerMajor ? size_t(peer) * pieces + piece
                                                     : piece * size_t(peers) + size_t(peer);
}

} // namespace pipert::cuda
