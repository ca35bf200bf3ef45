// `pipec check|sim|emit|build FILE.csv`: a PyTorch schedule CSV read where a
// .pipe is expected, as `pipec import --from torch-csv` reads it (its errors
// located in the CSV), then the .pipe text import writes, as a second buffer
// named "FILE.csv (as imported)" so later messages say where their text came from.
#pragma once

namespace pipec {

// Registers the translator for ".csv" (frontend/InputTranslator.h).
void registerTorchCsvInput();

} // namespace pipec
