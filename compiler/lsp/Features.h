// What the server answers about a document: its diagnostics (as `pipec check`
// reports them), hover text for names and ops, and where a name is declared.
#pragma once

#include "lsp/DocumentStore.h"

#include "llvm/Support/JSON.h"

namespace pipec::lsp {

// An LSP Range for a source range of the document's compilation.
llvm::json::Value rangeOf(const Document &document, llvm::SMRange range);

// The document's diagnostics as LSP Diagnostic objects: the kind's name as the
// code, notes with a location as related information, notes without one (the
// parameter values a failure happened at) appended to the message.
llvm::json::Array diagnosticsOf(const Document &document);

// A Hover for the name or op at `offset`, or null.
llvm::json::Value hoverAt(const Document &document, size_t offset);

// The Location of the declaration of the name at `offset`, or null.
llvm::json::Value definitionAt(const Document &document, size_t offset);

} // namespace pipec::lsp
