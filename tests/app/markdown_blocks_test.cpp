// splitMarkdown against Qt's own Markdown reader (md4c through QTextDocument): for each input,
// the code blocks we cut out must be the fenced code blocks md4c finds, with the same language.
#include <QTest>
#include <QTextBlock>
#include <QTextDocument>

#include "app/desktop/chat/markdown_blocks.h"

using hearth::app::MarkdownBlock;
using hearth::app::splitMarkdown;

namespace {

struct CodeBlock {
  QString text;
  QString language;
};

// md4c's view: consecutive blocks carrying the code-fence property form one code block.
QVector<CodeBlock> md4cCodeBlocks(const QString& markdown) {
  QTextDocument doc;
  doc.setMarkdown(markdown);
  QVector<CodeBlock> out;
  bool inCode = false;
  for (QTextBlock b = doc.begin(); b.isValid(); b = b.next()) {
    const bool code = b.blockFormat().hasProperty(QTextFormat::BlockCodeFence);
    if (code && !inCode)
      out.push_back({b.text(), b.blockFormat().stringProperty(QTextFormat::BlockCodeLanguage)});
    else if (code)
      out.back().text += u'\n' + b.text();
    inCode = code;
  }
  for (CodeBlock& c : out) c.text.replace(QChar::LineSeparator, u'\n');
  return out;
}

}  // namespace

class MarkdownBlocksTest : public QObject {
  Q_OBJECT
 private slots:
  void codeBlocksMatchMd4c_data() {
    QTest::addColumn<QString>("markdown");
    QTest::newRow("one block") << QStringLiteral(
        "Text\n\n```cpp\nint x = 1;\nreturn x;\n```\nAfter");
    QTest::newRow("two blocks") << QStringLiteral(
        "# Title\n\n```python\nprint(1)\n```\n\nmiddle *text*\n\n~~~\nplain\n~~~\n");
    QTest::newRow("longer closing fence") << QStringLiteral("````js\nlet a = '```';\n``````\nend");
    QTest::newRow("indented fence") << QStringLiteral("  ```sh\n  ls -l\n    nested\n  ```\n");
    QTest::newRow("tilde holds backticks") << QStringLiteral("~~~md\n```\ninner\n```\n~~~");
    QTest::newRow("info words") << QStringLiteral("```rust ignore\nfn main() {}\n```");
    QTest::newRow("not a fence (4 spaces)") << QStringLiteral("    ```\n    code\n\ntext");
    QTest::newRow("unicode") << QStringLiteral("说明：\n\n```\n你好，世界 🌍\n```\n");
    QTest::newRow("blank lines inside") << QStringLiteral("```\na\n\n\nb\n```");
  }

  void codeBlocksMatchMd4c() {
    QFETCH(QString, markdown);
    const QVector<CodeBlock> expected = md4cCodeBlocks(markdown);
    QVector<CodeBlock> ours;
    for (const MarkdownBlock& b : splitMarkdown(markdown))
      if (b.kind == MarkdownBlock::Kind::Code) ours.push_back({b.text, b.language});
    QCOMPARE(ours.size(), expected.size());
    for (int i = 0; i < ours.size(); ++i) {
      QCOMPARE(ours[i].text, expected[i].text);
      QCOMPARE(ours[i].language, expected[i].language);
    }
  }

  void proseKeepsEverythingOutsideTheFences() {
    const auto blocks = splitMarkdown(QStringLiteral("Intro **bold**\n\n```\nx\n```\nOutro"));
    QCOMPARE(blocks.size(), 3);
    QCOMPARE(blocks[0].text, QStringLiteral("Intro **bold**\n"));
    QCOMPARE(blocks[2].text, QStringLiteral("Outro"));
  }

  void unclosedFenceWhileStreamingRunsToTheEnd() {
    const auto blocks = splitMarkdown(QStringLiteral("Here:\n```python\ndef f():\n    return"));
    QCOMPARE(blocks.size(), 2);
    QCOMPARE(blocks[1].kind, MarkdownBlock::Kind::Code);
    QVERIFY(!blocks[1].closed);
    QCOMPARE(blocks[1].text, QStringLiteral("def f():\n    return"));
  }
};

QTEST_MAIN(MarkdownBlocksTest)
#include "markdown_blocks_test.moc"
