// /metrics against the real tools: `promtool check metrics` accepts the
// exposition, and a real Prometheus server (Debian's package, started here
// on a free loopback port with a throw-away config and storage) scrapes the
// headless binary and answers a query for batchpilot_requests_total.
#include "headless_process.h"
#include "rest_test_util.h"

#include <QtTest>

#include <QStandardPaths>
#include <QTcpServer>
#include <QUrlQuery>

namespace {
quint16 freeLoopbackPort()
{
    QTcpServer probe;
    probe.listen(QHostAddress::LocalHost, 0);
    return probe.serverPort(); // released when `probe` goes; the tiny race is acceptable here
}
} // namespace

class TestRestPrometheus : public QObject {
    Q_OBJECT
private slots:
    void initTestCase()
    {
        // With the fake NVML (tests/app/fake_nvml.c): the exposition has the GPU gauges too.
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert("BATCHPILOT_NVML_LIBRARY", QStringLiteral(FAKE_NVML_PATH));
        env.insert("FAKE_NVML_SAMPLE", "73,41,3221225472,85899345920");
        m_server = std::make_unique<HeadlessProcess>(QStringList{"--model", "builtin:echo"}, env);
        QVERIFY2(m_server->start(), qPrintable(m_server->output()));
        m_port = m_server->port();
        // Some traffic of every kind the counters distinguish.
        QCOMPARE(putConfig(m_port, {{"max_queue_delay_us", 500}}).status, 200);
        for (int i = 0; i < 20; ++i)
            QCOMPARE(httpRequest(m_port, "POST", "/v1/infer", inferBody({i, i + 1, i + 2})).status, 200);
        QCOMPARE(httpRequest(m_port, "POST", "/v1/infer", inferBody({999})).status, 400);
        QCOMPARE(httpRequest(m_port, "POST", "/v1/infer", inferBody({1}, {{"timeout_ms", 0}})).status, 504);
        QCOMPARE(putConfig(m_port, {{"policy", "bucketed"}, {"bucket_edges", QJsonArray({4, 8})}}).status, 200);
        QCOMPARE(httpRequest(m_port, "POST", "/v1/infer", inferBody({1, 2, 3, 4, 5})).status, 200);
    }
    void cleanupTestCase()
    {
        if (m_prometheus.state() != QProcess::NotRunning) {
            m_prometheus.terminate();
            if (!m_prometheus.waitForFinished(10000)) {
                m_prometheus.kill();
                m_prometheus.waitForFinished(5000);
            }
        }
        QVERIFY(m_server->stop(SIGTERM));
        QCOMPARE(m_server->exitCode(), 0);
    }

    void promtoolAcceptsTheExposition()
    {
        const QString promtool = QStandardPaths::findExecutable("promtool");
        QVERIFY2(!promtool.isEmpty(), "promtool not found (Debian package 'prometheus', see packaging/install-deps.sh)");
        const HttpResponse metrics = httpRequest(m_port, "GET", "/metrics");
        QCOMPARE(metrics.status, 200);
        QVERIFY(metrics.body.contains("\nbatchpilot_gpu_utilization_ratio{gpu=\"0\",name=\"Fake GPU 0\"} 0.73\n"));
        QProcess check;
        check.start(promtool, {"check", "metrics"});
        QVERIFY(check.waitForStarted());
        check.write(metrics.body);
        check.closeWriteChannel();
        QVERIFY(check.waitForFinished(30000));
        const QString said = QString::fromUtf8(check.readAllStandardOutput() + check.readAllStandardError());
        QVERIFY2(check.exitCode() == 0, qPrintable(said));
        QVERIFY2(said.trimmed().isEmpty(), qPrintable(said)); // no lint remarks either
    }

    void prometheusScrapesAndAnswers()
    {
        const QString binary = QStandardPaths::findExecutable("prometheus");
        QVERIFY2(!binary.isEmpty(), "prometheus not found (Debian package 'prometheus')");
        QVERIFY(m_dir.isValid());
        const quint16 webPort = freeLoopbackPort();
        m_webPort = webPort;
        QFile config(m_dir.filePath("prometheus.yml"));
        QVERIFY(config.open(QIODevice::WriteOnly));
        config.write(QStringLiteral("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                                    "scrape_configs:\n  - job_name: batchpilot\n    scrape_interval: 1s\n"
                                    "    static_configs:\n      - targets: ['127.0.0.1:%1']\n")
                         .arg(m_port)
                         .toUtf8());
        config.close();
        m_prometheus.setProcessChannelMode(QProcess::MergedChannels);
        m_prometheus.start(binary, {"--config.file=" + config.fileName(),
                                    "--storage.tsdb.path=" + m_dir.filePath("data"),
                                    QStringLiteral("--web.listen-address=127.0.0.1:%1").arg(webPort),
                                    "--log.level=warn"});
        QVERIFY(m_prometheus.waitForStarted(10000));

        // Ready, then the first scrape landed: QTRY-style polling with a deadline.
        QString last;
        auto scraped = [&] {
            QUrlQuery query;
            query.addQueryItem("query", "batchpilot_requests_total{status=\"ok\"}");
            const HttpResponse r = httpRequest(
                webPort, "GET", "/api/v1/query?" + query.toString(QUrl::FullyEncoded).toUtf8(), {}, {}, 5000);
            last = r.error + QString::fromUtf8(r.body);
            return r.status == 200 ? r.json().value("data").toObject().value("result").toArray() : QJsonArray();
        };
        QJsonArray result;
        QTRY_VERIFY2_WITH_TIMEOUT(!(result = scraped()).isEmpty() || m_prometheus.state() != QProcess::Running,
                                  qPrintable(last), 60000);
        QVERIFY2(!result.isEmpty(), qPrintable(last + "\n" + QString::fromUtf8(m_prometheus.readAll())));
        const QJsonObject series = result.at(0).toObject();
        QCOMPARE(series.value("metric").toObject().value("job").toString(), QStringLiteral("batchpilot"));
        QCOMPARE(series.value("metric").toObject().value("status").toString(), QStringLiteral("ok"));
        QVERIFY(series.value("value").toArray().at(1).toString().toDouble() >= 21);

        // The target is healthy and the histograms are there for histogram_quantile().
        const HttpResponse up = httpRequest(webPort, "GET", "/api/v1/query?query=up");
        QCOMPARE(up.json().value("data").toObject().value("result").toArray().at(0).toObject()
                     .value("value").toArray().at(1).toString(),
                 QStringLiteral("1"));
        const HttpResponse buckets = httpRequest(
            webPort, "GET", "/api/v1/query?query=count(batchpilot_request_duration_seconds_bucket)");
        QVERIFY(buckets.json().value("data").toObject().value("result").toArray().at(0).toObject()
                    .value("value").toArray().at(1).toString().toInt() >= 10);
    }

    void dashboardQueriesEvaluate()
    {
        // Every PromQL expression of packaging/grafana-dashboard.json parses
        // and evaluates against the live server (a name typo returns an empty
        // result, so the batchpilot_ series must exist too).
        QVERIFY2(m_webPort != 0, "needs prometheusScrapesAndAnswers");
        QString sourceDir = qEnvironmentVariable("BATCHPILOT_SOURCE_DIR"); // set by CTest
        if (sourceDir.isEmpty())
            sourceDir = QStringLiteral(QT_TESTCASE_SOURCEDIR "/../..");
        QFile file(sourceDir + "/packaging/grafana-dashboard.json");
        QVERIFY2(file.open(QIODevice::ReadOnly), qPrintable(file.fileName()));
        const QJsonArray panels = QJsonDocument::fromJson(file.readAll()).object().value("panels").toArray();
        int checked = 0;
        for (const QJsonValue &panel : panels) {
            for (const QJsonValue &target : panel.toObject().value("targets").toArray()) {
                QString expr = target.toObject().value("expr").toString();
                expr.replace("$__rate_interval", "1m").replace("$job", ".*");
                QUrlQuery query;
                query.addQueryItem("query", expr);
                const HttpResponse r = httpRequest(
                    m_webPort, "GET", "/api/v1/query?" + query.toString(QUrl::FullyEncoded).toUtf8());
                QVERIFY2(r.status == 200 && r.json().value("status").toString() == "success",
                         qPrintable(expr + " -> " + QString::fromUtf8(r.body)));
                // Instant vectors of plain series must find data (rates may not have two points yet).
                if (!expr.contains("rate(") && !expr.contains("increase("))
                    QVERIFY2(!r.json().value("data").toObject().value("result").toArray().isEmpty(), qPrintable(expr));
                ++checked;
            }
        }
        QVERIFY(checked >= 20);
    }

private:
    quint16 m_webPort = 0;
    std::unique_ptr<HeadlessProcess> m_server;
    quint16 m_port = 0;
    QTemporaryDir m_dir;
    QProcess m_prometheus;
};

QTEST_GUILESS_MAIN(TestRestPrometheus)
#include "test_rest_prometheus.moc"
