// The byte-level tokenizer: exact round trips, ids outside the byte range and
// invalid UTF-8 become U+FFFD.
#include "engine/core/tokenizer.h"

#include <QtTest>

using namespace bp;

class TestTokenizer : public QObject {
    Q_OBJECT
private slots:
    void roundTrip_data()
    {
        QTest::addColumn<QByteArray>("text");
        QTest::newRow("empty") << QByteArray();
        QTest::newRow("ascii") << QByteArray("Hello, batching!");
        QTest::newRow("utf8") << QByteArray("Grüße, 日本語, emoji \xF0\x9F\x9A\x80");
        QTest::newRow("nul inside") << QByteArray("a\0b", 3);
    }
    void roundTrip()
    {
        QFETCH(QByteArray, text);
        const std::string s(text.constData(), std::size_t(text.size()));
        const auto tokens = ByteTokenizer::encode(s);
        QCOMPARE(tokens.size(), s.size());
        QVERIFY(ByteTokenizer::isByteSequence(tokens));
        QCOMPARE(ByteTokenizer::decode(tokens), s);
    }

    void bytesAreIds()
    {
        const auto tokens = ByteTokenizer::encode("A\xFF");
        QCOMPARE(tokens, (std::vector<TokenId>{65, 255}));
    }

    void outOfRangeAndInvalidUtf8()
    {
        const std::string replacement = "\xEF\xBF\xBD";
        QCOMPARE(ByteTokenizer::decode(std::vector<TokenId>{72, 300, 105}), "H" + replacement + "i");
        QCOMPARE(ByteTokenizer::decode(std::vector<TokenId>{-1}), replacement);
        QVERIFY(!ByteTokenizer::isByteSequence(std::vector<TokenId>{1, 256}));
        // a lone continuation byte, a truncated 3-byte sequence, an overlong '/'
        QCOMPARE(ByteTokenizer::decode(std::vector<TokenId>{0x80}), replacement);
        QCOMPARE(ByteTokenizer::decode(std::vector<TokenId>{0xE6, 0x97, 65}),
                 replacement + replacement + "A");
        QCOMPARE(ByteTokenizer::decode(std::vector<TokenId>{0xC0, 0xAF}), replacement + replacement);
    }
};

QTEST_GUILESS_MAIN(TestTokenizer)
#include "test_tokenizer.moc"
