// See normalizer.hpp.
#include "normalizer.hpp"

#include <utf8proc.h>

#include <algorithm>
#include <cstdlib>

#include "utf8.hpp"

namespace loom::bpe {
namespace {

using Source = std::pair<uint32_t, uint32_t>;

// One step over `in` (whose bytes come from in.source).
NormalizedText lowercase(const NormalizedText& in) {
  NormalizedText out;
  out.text.reserve(in.text.size());
  out.source.reserve(in.text.size());
  const auto* bytes = reinterpret_cast<const unsigned char*>(in.text.data());
  size_t position = 0;
  while (position < in.text.size()) {
    const size_t start = position;
    const char32_t c = decode_valid_utf8(bytes, &position);
    const Source from{in.source[start].first, in.source[position - 1].second};
    const size_t before = out.text.size();
    if (c == 0x130) {  // the one unconditional multi-character lower-case mapping
      append_utf8(out.text, U'i');
      append_utf8(out.text, 0x307);
    } else {
      append_utf8(out.text, static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(c))));
    }
    out.source.insert(out.source.end(), out.text.size() - before, from);
  }
  return out;
}

// A starter (combining class 0) begins a run that normalization may change as a whole.
bool is_starter(char32_t c) {
  const utf8proc_property_t* p = utf8proc_get_property(static_cast<utf8proc_int32_t>(c));
  return p->combining_class == 0;
}

// Code points of `text` decomposed (canonically, or for compatibility under NFKC/NFKD).
std::vector<utf8proc_int32_t> decomposed(std::string_view text, NormalizerStep step) {
  int options = UTF8PROC_STABLE | UTF8PROC_DECOMPOSE;
  if (step == NormalizerStep::nfkc || step == NormalizerStep::nfkd) options |= UTF8PROC_COMPAT;
  std::vector<utf8proc_int32_t> buffer(text.size() * 4 + 8);
  const auto n = utf8proc_decompose(reinterpret_cast<const utf8proc_uint8_t*>(text.data()),
                                    static_cast<utf8proc_ssize_t>(text.size()), buffer.data(),
                                    static_cast<utf8proc_ssize_t>(buffer.size()), static_cast<utf8proc_option_t>(options));
  buffer.resize(n > 0 ? static_cast<size_t>(n) : 0);
  return buffer;
}

// Sources of `mapped`, what run in[start, end) became, as Hugging Face aligns them: decomposition
// gives every part of a character that character's source; a composed character keeps the source
// of the first character it was composed from (its starter), the marks it absorbed give up theirs.
void align_changed_run(const NormalizedText& in, size_t start, size_t end, std::string_view mapped,
                       NormalizerStep step, NormalizedText& out) {
  std::vector<Source> parts;  // source of each code point of the run's decomposition
  const auto* bytes = reinterpret_cast<const unsigned char*>(in.text.data());
  for (size_t position = start; position < end;) {
    const size_t from = position;
    decode_valid_utf8(bytes, &position);
    const Source source{in.source[from].first, in.source[position - 1].second};
    const size_t count = decomposed(std::string_view(in.text.data() + from, position - from), step).size();
    parts.insert(parts.end(), std::max<size_t>(count, 1), source);
  }
  const auto* out_bytes = reinterpret_cast<const unsigned char*>(mapped.data());
  size_t part = 0;
  for (size_t position = 0; position < mapped.size();) {
    const size_t from = position;
    decode_valid_utf8(out_bytes, &position);
    const std::string_view character = mapped.substr(from, position - from);
    const Source source = parts[std::min(part, parts.size() - 1)];
    part += std::max<size_t>(decomposed(character, step).size(), 1);
    out.text.append(character);
    out.source.insert(out.source.end(), character.size(), source);
  }
}

NormalizedText unicode_form(const NormalizedText& in, NormalizerStep step) {
  int options = UTF8PROC_STABLE;
  if (step == NormalizerStep::nfc || step == NormalizerStep::nfkc) options |= UTF8PROC_COMPOSE;
  else options |= UTF8PROC_DECOMPOSE;
  if (step == NormalizerStep::nfkc || step == NormalizerStep::nfkd) options |= UTF8PROC_COMPAT;
  NormalizedText out;
  const auto* bytes = reinterpret_cast<const unsigned char*>(in.text.data());
  size_t position = 0;
  while (position < in.text.size()) {
    // A run: one character and the non-starters after it.
    const size_t start = position;
    decode_valid_utf8(bytes, &position);
    while (position < in.text.size()) {
      size_t next = position;
      if (is_starter(decode_valid_utf8(bytes, &next))) break;
      position = next;
    }
    const std::string_view run(in.text.data() + start, position - start);
    utf8proc_uint8_t* mapped = nullptr;
    const auto n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(run.data()),
                                static_cast<utf8proc_ssize_t>(run.size()), &mapped,
                                static_cast<utf8proc_option_t>(options));
    if (n < 0 || std::string_view(reinterpret_cast<const char*>(mapped), static_cast<size_t>(n)) == run) {
      out.text.append(run);  // unchanged: every byte keeps its own source
      out.source.insert(out.source.end(), in.source.begin() + static_cast<ptrdiff_t>(start),
                        in.source.begin() + static_cast<ptrdiff_t>(position));
    } else {
      align_changed_run(in, start, position, std::string_view(reinterpret_cast<const char*>(mapped), static_cast<size_t>(n)),
                        step, out);
    }
    std::free(mapped);
  }
  return out;
}

}  // namespace

NormalizedText Normalizer::apply(std::string_view input, uint32_t base) const {
  NormalizedText current;
  current.text.assign(input);
  current.source.resize(input.size());
  // Each byte's source is its whole character.
  const auto* bytes = reinterpret_cast<const unsigned char*>(input.data());
  size_t position = 0;
  while (position < input.size()) {
    const size_t start = position;
    position += utf8_length(bytes[start]);
    for (size_t i = start; i < position; ++i)
      current.source[i] = Source{base + static_cast<uint32_t>(start), base + static_cast<uint32_t>(position)};
  }
  for (NormalizerStep step : steps_)
    current = step == NormalizerStep::lowercase ? lowercase(current) : unicode_form(current, step);
  return current;
}

}  // namespace loom::bpe
