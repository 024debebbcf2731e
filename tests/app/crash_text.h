// Deterministic message texts for the kill -9 test: both the writer process and the checker
// regenerate a message's full text from its key. Mixes ASCII, Latin-1, CJK and 4-byte UTF-8
// (emoji) so that a cut inside a character would show.
#pragma once

#include <QString>
#include <QStringList>

namespace hearth::test {

inline quint64 crashTextMix(quint64 x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// The pieces a streamed answer arrives in; their concatenation is the message.
inline QStringList crashTextPieces(quint64 key) {
  static const char32_t kAlphabet[] = {U'a',  U'b',  U'c',  U'x', U' ',    U'ä',  U'ß', U'é',
                                       U'中', U'文', U'字', U'😀', U'🦀', U'\n', U'.', U'Z'};
  QStringList pieces;
  quint64 state = key;
  const int count = 5 + int(crashTextMix(state) % 40);
  for (int p = 0; p < count; ++p) {
    state = crashTextMix(state);
    const int len = 1 + int(state % 12);
    QString piece;
    for (int i = 0; i < len; ++i) {
      state = crashTextMix(state);
      const char32_t c = kAlphabet[state % (sizeof(kAlphabet) / sizeof(kAlphabet[0]))];
      piece += QString::fromUcs4(&c, 1);
    }
    pieces << piece;
  }
  return pieces;
}

inline QString crashText(quint64 key) {
  return crashTextPieces(key).join(QString());
}

}  // namespace hearth::test
