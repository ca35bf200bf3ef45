// A token in 48 bytes instead of ANTLR's 128-byte CommonToken, and the lexer that
// makes them. The token stream holds every token of the file for the whole parse,
// so a token's size is paid about once per input byte. Inputs are capped far
// below 4 GiB (InputFile.h), so 32-bit offsets, lines and columns suffice.
#pragma once

#include "PipeLexer.h"

#include <cstdint>

namespace pipec {

class CompactToken final : public antlr4::WritableToken {
public:
  CompactToken(antlr4::TokenSource *source, size_t type, size_t channel, size_t start,
               size_t stop, size_t line, size_t column)
      : source_(source), start_(static_cast<uint32_t>(start)),
        stop_(static_cast<uint32_t>(stop)), line_(static_cast<uint32_t>(line)),
        column_(static_cast<uint32_t>(column)), type_(static_cast<uint16_t>(type)),
        channel_(static_cast<uint8_t>(channel)) {}

  std::string getText() const override {
    antlr4::CharStream *input = getInputStream();
    if (input && start_ < input->size() && stop_ < input->size())
      return input->getText(antlr4::misc::Interval(size_t(start_), size_t(stop_)));
    return "<EOF>";
  }
  size_t getType() const override { return type_; }
  size_t getLine() const override { return line_; }
  size_t getCharPositionInLine() const override { return column_; }
  size_t getChannel() const override { return channel_; }
  size_t getTokenIndex() const override { return index_; }
  size_t getStartIndex() const override { return start_; }
  size_t getStopIndex() const override { return stop_; }
  antlr4::TokenSource *getTokenSource() const override { return source_; }
  antlr4::CharStream *getInputStream() const override { return source_->getInputStream(); }
  std::string toString() const override {
    return "[@" + std::to_string(index_) + "," + std::to_string(start_) + ":" +
           std::to_string(stop_) + "='" + getText() + "',<" + std::to_string(type_) + ">," +
           std::to_string(line_) + ":" + std::to_string(column_) + "]";
  }

  // The lexer emits no changed text; the other setters are for the token stream.
  void setText(const std::string &) override {}
  void setType(size_t type) override { type_ = static_cast<uint16_t>(type); }
  void setLine(size_t line) override { line_ = static_cast<uint32_t>(line); }
  void setCharPositionInLine(size_t column) override { column_ = static_cast<uint32_t>(column); }
  void setChannel(size_t channel) override { channel_ = static_cast<uint8_t>(channel); }
  void setTokenIndex(size_t index) override { index_ = static_cast<uint32_t>(index); }

private:
  antlr4::TokenSource *source_;
  uint32_t start_, stop_, line_, column_;
  uint32_t index_ = 0;
  uint16_t type_;
  uint8_t channel_;
};

class CompactLexer : public pipegen::PipeLexer {
public:
  using PipeLexer::PipeLexer;

  antlr4::Token *emit() override {
    auto made = std::make_unique<CompactToken>(this, type, channel, tokenStartCharIndex,
                                               getCharIndex() - 1, tokenStartLine,
                                               tokenStartCharPositionInLine);
    antlr4::Token *token = made.get();
    PipeLexer::emit(std::move(made));
    return token;
  }
};

} // namespace pipec
