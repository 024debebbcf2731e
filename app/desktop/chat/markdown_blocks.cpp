#include "app/desktop/chat/markdown_blocks.h"

#include <QStringList>

namespace hearth::app {

namespace {

struct Fence {
  QChar ch;
  qsizetype length = 0;
  qsizetype indent = 0;
  QString info;
};

qsizetype leadingSpaces(const QString& line) {
  qsizetype n = 0;
  while (n < line.size() && line[n] == u' ') ++n;
  return n;
}

// An opening fence: up to 3 spaces, then 3+ backticks or tildes, then an info string (which for
// backtick fences may not contain a backtick).
bool openingFence(const QString& line, Fence* fence) {
  const qsizetype indent = leadingSpaces(line);
  if (indent > 3 || indent >= line.size()) return false;
  const QChar ch = line[indent];
  if (ch != u'`' && ch != u'~') return false;
  qsizetype n = indent;
  while (n < line.size() && line[n] == ch) ++n;
  if (n - indent < 3) return false;
  const QString info = line.mid(n).trimmed();
  if (ch == u'`' && info.contains(u'`')) return false;
  *fence = {ch, n - indent, indent, info};
  return true;
}

bool closingFence(const QString& line, const Fence& open) {
  const qsizetype indent = leadingSpaces(line);
  if (indent > 3) return false;
  qsizetype n = indent;
  while (n < line.size() && line[n] == open.ch) ++n;
  if (n - indent < open.length) return false;
  return line.mid(n).trimmed().isEmpty();
}

QString stripIndent(const QString& line, qsizetype indent) {
  return line.mid(std::min(indent, leadingSpaces(line)));
}

}  // namespace

QVector<MarkdownBlock> splitMarkdown(const QString& markdown) {
  QVector<MarkdownBlock> blocks;
  QStringList prose;
  const auto flushProse = [&] {
    QString text = prose.join(u'\n');
    prose.clear();
    if (text.trimmed().isEmpty()) return;
    blocks.push_back({MarkdownBlock::Kind::Text, text, {}, true});
  };

  const QStringList lines = markdown.split(u'\n');
  for (qsizetype i = 0; i < lines.size(); ++i) {
    Fence fence;
    if (!openingFence(lines[i], &fence)) {
      prose << lines[i];
      continue;
    }
    flushProse();
    MarkdownBlock code{MarkdownBlock::Kind::Code, {}, fence.info.section(u' ', 0, 0), false};
    QStringList body;
    for (++i; i < lines.size(); ++i) {
      if (closingFence(lines[i], fence)) {
        code.closed = true;
        break;
      }
      body << stripIndent(lines[i], fence.indent);
    }
    code.text = body.join(u'\n');
    blocks.push_back(code);
  }
  flushProse();
  return blocks;
}

}  // namespace hearth::app
