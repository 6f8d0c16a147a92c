// The PDF report renders: Qt's PDF writer produces a document that poppler
// (pdftoppm) turns into PNG pages that are not blank — text on every page,
// coloured chart lines somewhere — also when rendered off the main thread,
// as the REST endpoint and the console do.
#include "report_fixture.h"

#include "app/report/report_builder.h"
#include "app/report/report_pdf.h"

#include <QDir>
#include <QImage>
#include <QProcess>
#include <QStandardPaths>
#include <QtTest>

#include <cmath>
#include <thread>

using namespace bp;

namespace {

struct PageStats {
    double stddev = 0;      // of the grey level, 0..255
    double inked = 0;       // fraction of pixels that are not near-white
    std::size_t coloured = 0; // saturated pixels (chart lines, table headers are pale)
};

PageStats statsOf(const QImage &image)
{
    const QImage img = image.convertToFormat(QImage::Format_RGB32);
    double sum = 0, sum2 = 0;
    std::size_t inked = 0, coloured = 0;
    const std::size_t n = std::size_t(img.width()) * std::size_t(img.height());
    for (int y = 0; y < img.height(); ++y) {
        const auto *line = reinterpret_cast<const QRgb *>(img.constScanLine(y));
        for (int x = 0; x < img.width(); ++x) {
            const QColor c(line[x]);
            const double g = qGray(line[x]);
            sum += g;
            sum2 += g * g;
            inked += g < 235;
            coloured += c.hsvSaturation() > 120 && c.value() > 60;
        }
    }
    const double mean = sum / double(n);
    return {std::sqrt(std::max(0.0, sum2 / double(n) - mean * mean)), double(inked) / double(n), coloured};
}

} // namespace

class TestReportPdf : public QObject {
    Q_OBJECT
    std::unique_ptr<test::ReportFixture> f;
    QString pdftoppm;

    // Renders `pdf` to PNG pages at 50 dpi; empty on failure.
    QList<QImage> rasterize(const QByteArray &pdf, const QString &name)
    {
        const QString file = f->dir.filePath(name + ".pdf");
        QFile out(file);
        if (!out.open(QIODevice::WriteOnly) || out.write(pdf) != pdf.size())
            return {};
        out.close();
        QProcess p;
        p.start(pdftoppm, {"-r", "50", "-png", file, f->dir.filePath(name)});
        if (!p.waitForFinished(120000) || p.exitCode() != 0) {
            qWarning() << "pdftoppm failed:" << p.readAllStandardError();
            return {};
        }
        QList<QImage> pages;
        const QDir dir(f->dir.path());
        for (const QString &png : dir.entryList({name + "-*.png"}, QDir::Files, QDir::Name))
            pages << QImage(dir.filePath(png));
        return pages;
    }

private slots:
    void initTestCase()
    {
        pdftoppm = QStandardPaths::findExecutable("pdftoppm");
        if (pdftoppm.isEmpty())
            QSKIP("pdftoppm (poppler-utils) is not installed: run packaging/install-deps.sh");
        f = test::buildReportFixture();
        QVERIFY2(f->error.isEmpty(), qPrintable(f->error));
    }

    void rendersPagesThatAreNotBlank_data()
    {
        QTest::addColumn<bool>("replay");
        QTest::newRow("live") << false;
        QTest::newRow("replay") << true;
    }
    void rendersPagesThatAreNotBlank()
    {
        QFETCH(bool, replay);
        auto pdf = report::renderReport(*f->store, replay ? f->replay : f->live, QStringLiteral("pdf"));
        QVERIFY2(pdf, pdf.status().toString().c_str());
        QVERIFY(pdf->startsWith("%PDF-"));
        const QList<QImage> pages = rasterize(*pdf, QTest::currentDataTag());
        QVERIFY(pages.size() >= 2); // facts and tables, then the four charts
        std::size_t coloured = 0;
        for (int i = 0; i < pages.size(); ++i) {
            QVERIFY(!pages[i].isNull());
            QVERIFY(pages[i].height() > pages[i].width()); // A4 portrait
            const PageStats s = statsOf(pages[i]);
            QVERIFY2(s.stddev > 8 && s.inked > 0.005,
                     qPrintable(QStringLiteral("page %1: stddev %2, inked %3").arg(i + 1).arg(s.stddev).arg(s.inked)));
            coloured += s.coloured;
        }
        QVERIFY2(coloured > 300, qPrintable(QStringLiteral("%1 coloured pixels").arg(coloured))); // the charts' lines
    }

    void rendersOffTheMainThread()
    {
        Result<QByteArray> pdf = Status(StatusCode::Internal, "not run");
        std::thread worker([&] { pdf = report::renderReport(*f->store, f->live, QStringLiteral("pdf")); });
        worker.join();
        QVERIFY2(pdf, pdf.status().toString().c_str());
        QVERIFY(pdf->startsWith("%PDF-"));
        QCOMPARE(rasterize(*pdf, "thread").size() >= 2, true);
    }
};

QTEST_MAIN(TestReportPdf)
#include "test_report_pdf.moc"
