// The version of the program format: the tables of <pipert/Program.h> and
// <pipert/StreamProgram.h>, the names emitted programs spell them with, and
// what they mean. pipec and the runtime include these same headers, so the two
// cannot disagree on a layout; a program emitted by another pipec can, and its
// static_assert against this constant stops it at compile time.
//
// Bump it whenever a table struct, an enum value, the meaning of a field or
// the encoding (pipert/ProgramEncoding.h) changes. Dependency-free: the compiler includes it too.
#pragma once

namespace pipert {

inline constexpr int kProgramFormatVersion = 5; // 3: tables encoded (ProgramEncoding.h);
                                                // 4: CPU programs carry stream programs too;
                                                // 5: the recompute op R (3 bits of kind)
// 6: BPipe's transfers (Evict, Hold, Return, Load; evicted and returned
// messages): a fourth kind bit in an op's lead byte, a second in a message's.
// Only programs that use them are written in format 6, so every other program
// stays byte-identical and readable by a format-5 runtime; a format-5 runtime
// refuses a format-6 program by its version. This runtime reads both.
inline constexpr int kProgramFormatTransfers = 6;

} // namespace pipert
