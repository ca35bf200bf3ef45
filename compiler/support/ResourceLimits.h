// The resource limits of pipec, in one place: every command and the language
// server take their defaults from here, so a limit cannot hold in one command
// and not in another (issue 26). Each is a stated number, chosen so that any
// input within all of them is checked in well under 2 GB of address space; the
// reason for each is beside it. Going past one is always a named error with a
// location where there is one (ElabLimitExceeded, DomainTooLarge,
// TooManyErrors, "larger than the 12 MiB limit for an input file", ...),
// exit 1 or 2, never a crash. The flags that change a limit (--error-limit,
// --max-ops, --max-iterations, --max-points, -j/--threads, --time) start from
// these values.
//
// This header is in support/, the lowest layer, so that elab/ (ElabLimits),
// frontend/ (InputFile, DomainCheck), the formatter and lsp/ can all include it.
#pragma once

#include <cstdint>

namespace pipec::limits {

// Errors shown before a command stops (check, sim, emit, build, import, fmt, the
// language server's diagnostics): enough to fix a file from, few enough that a
// file of junk does not print megabytes.
inline constexpr unsigned kErrorsShown = 20;

// Ops one elaborated schedule may have: about 640 MB of IR.
inline constexpr uint64_t kMaxOps = 20'000'000;
// Loop iterations one elaboration may run, all ranks together.
inline constexpr uint64_t kMaxIterations = 200'000'000;
// Points of a parameter domain one file may have (pipec check).
inline constexpr uint64_t kMaxPoints = 100'000;

// Threads any pool starts, whatever -j or --threads asks: above the cores the
// work is CPU-bound and gains nothing, and every thread reserves a stack (8 MB of
// address space) and a malloc arena. Pools also clamp to the machine's cores and
// start fewer when the system refuses one (support/WorkerThreads.h).
inline constexpr unsigned kMaxThreads = 256;

// Bytes of one input file: see support/InputFile.h for the measurement behind it.
inline constexpr uint64_t kMaxInputBytes = uint64_t(12) << 20;

// Seconds a time budget (synth --time) may ask for: one day.
inline constexpr double kMaxSeconds = 86400;

// The language server: the memory the analyses of all open documents may hold
// together, as estimated by lsp/DocumentStore.h (about 64 bytes per op; issue 26
// measured 520 MB for an 8M-op document). With one analysis running beside those
// kept, the server stays under 2 GB. Past it, the analyses of the documents edited
// least recently are released (and made again when needed), and a document over
// the budget alone gets the warning LspMemoryBudget.
inline constexpr uint64_t kLspMemoryBytes = uint64_t(768) << 20;

} // namespace pipec::limits
