// Chat templates (engine/model/chat_template.h) rendered byte for byte as
// transformers' apply_chat_template renders them: the real templates of nine
// model families (tests/fixtures/hf/templates, made by
// tools/make_hf_fixtures.py) over conversations with and without a system
// message, the generation prompt on and off; where transformers raises (a
// system message Gemma 2 or Mistral v0.1 refuses), the engine says the same.
// And what a broken template answers.
#include "engine/model/chat_template.h"

#include <QtTest>

#include <nlohmann/json.hpp>

#include <fstream>

using namespace bp;

namespace {

std::string templates()
{
    const char *root = std::getenv("BATCHPILOT_SOURCE_DIR");
    return std::string(root ? root : ".") + "/tests/fixtures/hf/templates/";
}

} // namespace

class TestChatTemplate : public QObject {
    Q_OBJECT
private slots:
    void rendersAsTransformers_data()
    {
        QTest::addColumn<QString>("name");
        std::ifstream in(templates() + "reference.json");
        const auto ref = nlohmann::json::parse(in);
        for (const auto &[name, _] : ref["templates"].items())
            QTest::newRow(name.c_str()) << QString::fromStdString(name);
    }
    void rendersAsTransformers()
    {
        QFETCH(QString, name);
        std::ifstream in(templates() + "reference.json");
        const auto ref = nlohmann::json::parse(in);
        const auto &entry = ref["templates"][name.toStdString()];
        std::ifstream src(templates() + name.toStdString() + ".jinja");
        const std::string source((std::istreambuf_iterator<char>(src)), std::istreambuf_iterator<char>());
        QVERIFY(!source.empty());
        auto tmpl = ChatTemplate::parse(source, entry["specials"].get<std::map<std::string, std::string>>());
        QVERIFY2(tmpl, tmpl.status().toString().c_str());
        int rendered = 0;
        for (const auto &c : entry["cases"]) {
            std::vector<ChatMessage> messages;
            for (const auto &m : ref["conversations"][c["conversation"].get<std::string>()])
                messages.push_back({m["role"], m["content"]});
            const bool gen = c["add_generation_prompt"];
            auto got = (*tmpl)->render(messages, gen);
            const std::string where =
                c["conversation"].get<std::string>() + (gen ? ", generation prompt" : "");
            if (c.contains("error")) {
                QVERIFY2(!got, where.c_str());
                QCOMPARE(got.status().code(), StatusCode::InvalidArgument);
                QVERIFY2(got.status().message().find(c["error"].get<std::string>()) != std::string::npos,
                         got.status().message().c_str());
                continue;
            }
            QVERIFY2(got, (where + ": " + got.status().message()).c_str());
            QCOMPARE(*got, c["prompt"].get<std::string>());
            ++rendered;
        }
        QVERIFY(rendered >= 4);
    }

    void brokenTemplatesAreErrors()
    {
        auto bad = ChatTemplate::parse("{% for m in messages %}{{ m['content'] }}", {});
        QVERIFY(!bad);
        QCOMPARE(bad.status().code(), StatusCode::InvalidArgument);
        QVERIFY(bad.status().message().find("does not parse") != std::string::npos);

        auto raising =
            ChatTemplate::parse("{{ raise_exception('no ' + messages[0]['role'] + ' here') }}", {});
        QVERIFY(raising);
        auto r = (*raising)->render({{"tool", "x"}});
        QVERIFY(!r);
        QVERIFY2(r.status().message().find("no tool here") != std::string::npos,
                 r.status().message().c_str());

        // Special tokens and tojson reach the template; an unknown filter fails
        // at render time with the engine's message.
        auto tojson = ChatTemplate::parse("{{ bos_token }}{{ messages | tojson }}", {{"bos_token", "<s>"}});
        QVERIFY(tojson);
        QCOMPARE((*tojson)->render({{"user", "Hi \"you\""}}).value(),
                 std::string("<s>[{\"role\": \"user\", \"content\": \"Hi \\\"you\\\"\"}]"));
        auto unknown = ChatTemplate::parse("{{ messages | no_such_filter }}", {});
        QVERIFY(!unknown || !(*unknown)->render({{"user", "x"}}));
    }
};

QTEST_GUILESS_MAIN(TestChatTemplate)
#include "test_chat_template.moc"
