// Splits an answer into prose and fenced code blocks, so that the chat view can render the prose
// as Markdown and give each code block its own frame and copy button. Follows CommonMark's fence
// rules (``` or ~~~, at most three spaces of indentation, closing fence at least as long); an
// unclosed fence, as while an answer streams, runs to the end.
#pragma once

#include <QString>
#include <QVector>

namespace hearth::app {

struct MarkdownBlock {
  enum class Kind { Text, Code };
  Kind kind = Kind::Text;
  QString text;      // for code: the code without its fences
  QString language;  // first word of the fence's info string
  bool closed = true;
};

QVector<MarkdownBlock> splitMarkdown(const QString& markdown);

}  // namespace hearth::app
