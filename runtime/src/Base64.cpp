// Base64 (RFC 4648, with padding): how an emitted program's source spells its
// encoded tables (pipert/ProgramEncoding.h), as a string literal.
#include "pipert/ProgramEncoding.h"

namespace pipert {

namespace {

constexpr char kBase64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

int base64Value(char c) {
  if (c >= 'A' && c <= 'Z')
    return c - 'A';
  if (c >= 'a' && c <= 'z')
    return c - 'a' + 26;
  if (c >= '0' && c <= '9')
    return c - '0' + 52;
  if (c == '+')
    return 62;
  if (c == '/')
    return 63;
  return -1;
}

std::string quoted(char c) {
  unsigned char u = static_cast<unsigned char>(c);
  if (u >= 0x20 && u < 0x7f)
    return std::string("'") + c + "'";
  return "byte " + std::to_string(u);
}

} // namespace

std::string toBase64(const std::vector<uint8_t> &bytes) {
  std::string text;
  text.reserve((bytes.size() + 2) / 3 * 4);
  for (size_t i = 0; i < bytes.size(); i += 3) {
    uint32_t group = uint32_t(bytes[i]) << 16;
    if (i + 1 < bytes.size())
      group |= uint32_t(bytes[i + 1]) << 8;
    if (i + 2 < bytes.size())
      group |= bytes[i + 2];
    text += kBase64[(group >> 18) & 63];
    text += kBase64[(group >> 12) & 63];
    text += i + 1 < bytes.size() ? kBase64[(group >> 6) & 63] : '=';
    text += i + 2 < bytes.size() ? kBase64[group & 63] : '=';
  }
  return text;
}

std::string fromBase64(const char *text, size_t size, std::vector<uint8_t> &bytes) {
  bytes.clear();
  if (size % 4 != 0)
    return "its length " + std::to_string(size) + " is not a multiple of 4";
  bytes.reserve(size / 4 * 3);
  for (size_t i = 0; i < size; i += 4) {
    uint32_t group = 0;
    int padding = 0;
    for (size_t k = 0; k < 4; ++k) {
      char c = text[i + k];
      int v = base64Value(c);
      if (c == '=' && i + 4 == size && k >= 2 && (k == 3 || text[i + 3] == '=')) {
        ++padding;
        v = 0;
      } else if (v < 0 || padding) {
        bytes.clear();
        return "character " + std::to_string(i + k) + ": " + quoted(c) + " is not base64";
      }
      group = group << 6 | uint32_t(v);
    }
    bytes.push_back(uint8_t(group >> 16));
    if (padding < 2)
      bytes.push_back(uint8_t(group >> 8));
    if (padding < 1)
      bytes.push_back(uint8_t(group));
  }
  return "";
}

} // namespace pipert
